package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/scripted"
)

// newForkCmd is `weft threads fork ID --at MSG [--before]`: a new thread from the thread's
// history at a message (docs/forks.md), printed as its id.
func newForkCmd(g *globals, db *string) *cobra.Command {
	var at string
	var before bool
	c := &cobra.Command{
		Use:   "fork ID --at MSG",
		Short: "Make a new thread from a thread's messages up to and including MSG (--before: up to it)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			if at == "" {
				return exit(exitUsage, fmt.Errorf("--at names the message to fork at (weft threads show %s lists them)", a[0]))
			}
			if rc := remoteOf(g); rc != nil {
				if before {
					return exit(exitUsage, fmt.Errorf("--before is local only; on a server, POST /api/threads/%s/messages/%s/edit or /retry forks before a message", a[0], at))
				}
				return rc.threadsFork(cmd, a[0], at)
			}
			reg, err := loadProject(g.dir)
			if err != nil {
				return err
			}
			st, err := openExisting(cmd, *db)
			if err != nil {
				return err
			}
			defer st.Close()
			orig, err := st.Thread(cmd.Context(), a[0])
			if err != nil {
				return exit(threadExit(err), err)
			}
			eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: scripted.New(nil), RecordEvents: true})
			if err != nil {
				return exit(exitFailure, err)
			}
			fork := eng.Fork
			if before {
				fork = eng.ForkBefore
			}
			// A local fork keeps the original's owner: the CLI acts as no one in particular.
			t, err := fork(cmd.Context(), orig.ID, at, orig.UserID)
			if err != nil {
				return remoteExit(err) // the same exit codes as the server's answers
			}
			fmt.Fprintf(cmd.OutOrStdout(), "forked %s at %s: %s\n", orig.ID, at, t.ID)
			return nil
		},
	}
	c.Flags().StringVar(&at, "at", "", "the id of the message to fork at")
	c.Flags().BoolVar(&before, "before", false, "copy the messages before MSG, not MSG itself")
	return c
}

// threadsFork forks a thread on the server; the fork belongs to the key's user.
func (r *remote) threadsFork(cmd *cobra.Command, id, at string) error {
	var out struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := r.do(cmd.Context(), "POST", threadPath(id)+"/fork", map[string]string{"at": at}, &out); err != nil {
		return remoteExit(err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "forked %s at %s: %s\n", id, at, out.Thread.ID)
	return nil
}
