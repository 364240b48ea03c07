package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/weft-agents/weft"
)

// ifBusyFlag registers --if-busy on a command that posts messages to a thread: what a message
// does when the thread is running (weft.IfBusy).
func ifBusyFlag(fl *pflag.FlagSet, p *string) {
	fl.StringVar(p, "if-busy", "", "when the thread is running: queue, reject, interrupt or rollback (default: the thread's, else queue)")
}

// parseIfBusy checks an --if-busy value ("" = the thread's default).
func parseIfBusy(s string) (weft.IfBusy, error) {
	p := weft.IfBusy(s)
	if !p.Valid() {
		return "", exit(exitUsage, fmt.Errorf("--if-busy %q: want queue, reject, interrupt or rollback", s))
	}
	return p, nil
}
