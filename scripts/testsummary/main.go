// Command testsummary reads `go test -json` on stdin, prints what `go test` prints without -v (a
// line per package, and the output of what failed), then one line naming the tests that skipped
// and why, grouped by reason — the PostgreSQL suites without WEFT_TEST_POSTGRES_URL, the Prompty
// conformance fixtures without the shared folder — which plain `go test` never shows. It exits 1
// when a package failed, as go test does.
//
//	go test -race -json ./... | go run ./scripts/testsummary
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
)

func main() {
	failed, err := summarize(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// summarize copies the plain go test report of the events in r to w, with the skip line last;
// failed reports whether any test or package failed.
func summarize(r io.Reader, w io.Writer) (failed bool, err error) {
	s := newSummary()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		s.add(sc.Bytes(), w)
	}
	if err := sc.Err(); err != nil {
		return s.failed, err
	}
	if line := s.skipLine(); line != "" {
		fmt.Fprintln(w, line)
	}
	return s.failed, nil
}
