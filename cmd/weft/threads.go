package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/scripted"
)

// defaultDB is the store of the commands that inspect persisted threads (cli.md: default
// .weft/weft.db, except for run).
func defaultDB() string { return envOr("WEFT_DB", ".weft/weft.db") }

func newThreadsCmd(g *globals) *cobra.Command {
	var db string
	c := &cobra.Command{
		Use:   "threads",
		Short: "List, show, export, stop or delete persisted threads",
		Long: `Inspect the threads of a store (--db, default .weft/weft.db; env WEFT_DB):

  weft threads list [--agent A] [--limit N]
  weft threads show ID        the thread's messages
  weft threads export ID      the thread as the weft run --json document
  weft threads stop ID        stop its run and set the stop flag
  weft threads delete ID      delete it and its descendants
  weft threads fork ID --at MSG [--before]      a new thread from its messages up to MSG
  weft threads approve ID CALL [--args JSON]   approve a tool call waiting for approval
  weft threads deny ID CALL [--reason TEXT]    deny it
  weft threads budget ID [--usd X] [--tokens N] set its budget and show its spend
  weft threads files ID                         its files (attachments, tool outputs)
  weft threads file ID PATH [-o FILE]           save one of them
  weft threads provide-env ID REQUEST K=V...    the variables a subagent asked for`,
	}
	c.PersistentFlags().StringVar(&db, "db", defaultDB(), "store: SQLite file or postgres:// URL (env WEFT_DB)")
	var agent string
	var limit int
	list := &cobra.Command{
		Use: "list", Short: "List threads, most recently active first", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if rc := remoteOf(g); rc != nil {
				return rc.threadsList(cmd, agent, limit)
			}
			st, err := openExisting(cmd, db)
			if err != nil {
				return err
			}
			defer st.Close()
			threads, total, err := st.Threads(cmd.Context(), weft.ThreadQuery{Agent: agent, Limit: limit})
			if err != nil {
				return exit(exitFailure, err)
			}
			printThreads(cmd, threads, total, func(id, preview string) string {
				if redact, err := engine.StoreRedactor(cmd.Context(), st, id); err == nil {
					return redact(preview)
				}
				return preview
			})
			return nil
		},
	}
	list.Flags().StringVar(&agent, "agent", "", "only threads of this agent")
	list.Flags().IntVar(&limit, "limit", 50, "at most this many threads")
	show := &cobra.Command{
		Use: "show ID", Short: "Print a thread's messages", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			if rc := remoteOf(g); rc != nil {
				return rc.threadsShow(cmd, a[0])
			}
			st, err := openExisting(cmd, db)
			if err != nil {
				return err
			}
			defer st.Close()
			msgs, err := st.Messages(cmd.Context(), a[0], weft.MessageQuery{Limit: -1, MaxDepth: 1 << 20})
			if err != nil {
				return exit(threadExit(err), err)
			}
			if _, err := st.Thread(cmd.Context(), a[0]); err != nil {
				return exit(threadExit(err), err)
			}
			recs, err := st.ToolCalls(cmd.Context(), a[0])
			if err != nil {
				return exit(exitFailure, err)
			}
			redact, err := engine.StoreRedactor(cmd.Context(), st, a[0])
			if err != nil {
				return exit(exitFailure, err)
			}
			var b strings.Builder
			printMessages(&b, msgs, approvalNotes(recs))
			fmt.Fprint(cmd.OutOrStdout(), redact(b.String()))
			return nil
		},
	}
	export := &cobra.Command{
		Use: "export ID", Short: "Print a thread as the weft run --json document", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			if rc := remoteOf(g); rc != nil {
				return rc.threadsExport(cmd, a[0])
			}
			st, err := openExisting(cmd, db)
			if err != nil {
				return err
			}
			defer st.Close()
			doc, err := buildDocument(cmd.Context(), st, a[0], &engine.RunResult{}, nil)
			if err != nil {
				return exit(threadExit(err), err)
			}
			redact, err := engine.StoreRedactor(cmd.Context(), st, a[0])
			if err != nil {
				return exit(exitFailure, err)
			}
			b, _ := json.MarshalIndent(doc, "", "  ")
			fmt.Fprintln(cmd.OutOrStdout(), redact(string(b)))
			return nil
		},
	}
	stop := &cobra.Command{
		Use: "stop ID", Short: "Stop a thread: nothing runs again until a user message or continue", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			if rc := remoteOf(g); rc != nil {
				return rc.threadsAction(cmd, "POST", "/api/threads/"+a[0]+"/stop", "stopped "+a[0])
			}
			reg, err := loadProject(g.dir)
			if err != nil {
				return err
			}
			st, err := openExisting(cmd, db)
			if err != nil {
				return err
			}
			defer st.Close()
			eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: scripted.New(nil)})
			if err != nil {
				return exit(exitFailure, err)
			}
			if err := eng.Stop(cmd.Context(), a[0]); err != nil {
				return exit(threadExit(err), err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "stopped %s\n", a[0])
			return nil
		},
	}
	del := &cobra.Command{
		Use: "delete ID", Short: "Delete a thread and its descendants", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			if rc := remoteOf(g); rc != nil {
				return rc.threadsAction(cmd, "DELETE", "/api/threads/"+a[0], "deleted "+a[0])
			}
			st, err := openExisting(cmd, db)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := st.DeleteThread(cmd.Context(), a[0]); err != nil {
				return exit(threadExit(err), err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted %s\n", a[0])
			return nil
		},
	}
	c.AddCommand(list, show, export, stop, del, newDecideCmd(g, &db, true), newDecideCmd(g, &db, false), newBudgetCmd(g, &db))
	c.AddCommand(newFilesCmds(g, &db)...)
	c.AddCommand(newProvideEnvCmd(g, &db))
	c.AddCommand(newForkCmd(g, &db))
	return c
}

// printThreads prints a thread listing, most recently active first, with a note when paged;
// redact redacts a thread's preview.
func printThreads(cmd *cobra.Command, threads []*weft.Thread, total int, redact func(threadID, preview string) string) {
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tAGENT\tSTATUS\tREASON\tLAST ACTIVITY\tPREVIEW")
	for _, t := range threads {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Agent, t.Status, t.StopReason,
			t.LastActivityAt.Local().Format(time.DateTime), redact(t.ID, oneLine(t.Preview)))
	}
	w.Flush()
	if total > len(threads) {
		fmt.Fprintf(cmd.ErrOrStderr(), "%d of %d threads\n", len(threads), total)
	}
}

// openExisting opens a store that must already exist (a missing file is a usage error, not a new
// empty database).
func openExisting(cmd *cobra.Command, dsn string) (weft.Store, error) {
	if dsn != ":memory:" && !strings.HasPrefix(dsn, "postgres") {
		if _, err := os.Stat(dsn); errors.Is(err, fs.ErrNotExist) {
			abs, _ := filepath.Abs(dsn)
			return nil, exit(exitUsage, fmt.Errorf("no store at %s: weft run creates it there (the default, .weft/weft.db, is relative to the current directory; --db or WEFT_DB names another)", abs))
		} else if err != nil {
			return nil, exit(exitUsage, fmt.Errorf("--db %s: %w", redactDSN(dsn), unwrapPath(err)))
		}
	}
	st, err := openStore(cmd.Context(), dsn, newLogger("warn", os.Stderr), nil)
	if err != nil {
		return nil, exit(exitUsage, fmt.Errorf("--db %s: %w", redactDSN(dsn), err))
	}
	return st, nil
}

func threadExit(err error) int {
	if weft.ErrorCode(err) == weft.ENotFound {
		return exitUsage
	}
	return exitFailure
}

// approvalNotes describes, by call id, the approval state of the calls that needed one.
func approvalNotes(recs []weft.ToolCallRecord) map[string]string {
	notes := map[string]string{}
	for i := range recs {
		a := engine.ApprovalOf(&recs[i])
		switch a.Status {
		case "awaiting":
			notes[recs[i].CallID] = "awaiting approval"
		case "approved":
			n := "approved"
			if a.By != "" {
				n += " by " + a.By
			}
			if len(a.Arguments) > 0 {
				n += ", with arguments " + string(a.Arguments)
			}
			notes[recs[i].CallID] = n
		case "denied":
			n := "denied"
			if a.By != "" {
				n += " by " + a.By
			}
			if a.Reason != "" {
				n += ": " + a.Reason
			}
			notes[recs[i].CallID] = n
		}
	}
	return notes
}

// printMessages prints messages as `[seq] role: content`, nested rows indented, tool calls shown
// with their approval state (notes, by call id).
func printMessages(w io.Writer, msgs []weft.Message, notes map[string]string) {
	for _, m := range msgs {
		indent := strings.Repeat("  ", m.Depth)
		head := string(m.Role)
		if m.Name != "" {
			head += "(" + m.Name + ")"
		}
		if m.Silent {
			head += " [silent]"
		}
		if m.Metadata["context_summary"] == true {
			head += fmt.Sprintf(" [summary of %v messages through seq %v]", m.Metadata["summary_messages"], m.Metadata["summary_through_seq"])
		}
		if m.Status != weft.MessageCompleted {
			head += " [" + string(m.Status) + "]"
		}
		fmt.Fprintf(w, "%s[%d] %s: %s\n", indent, m.Seq, head, strings.ReplaceAll(m.Content, "\n", "\n"+indent+"    "))
		for _, c := range m.ToolCalls {
			fmt.Fprintf(w, "%s    → %s(%s) id=%s", indent, c.Name, c.Arguments, c.ID)
			if n := notes[c.ID]; n != "" {
				fmt.Fprintf(w, " [%s]", n)
			}
			fmt.Fprintln(w)
		}
		for _, a := range m.Attachments {
			fmt.Fprintf(w, "%s    📎 %s (%s, %d bytes) %s\n", indent, a.Name, a.MimeType, a.Size, a.Path)
		}
	}
}
