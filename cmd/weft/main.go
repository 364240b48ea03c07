// Command weft runs, validates and inspects Weft agent projects.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes of the weft command; exitApproval (6) is in approve.go.
const (
	exitOK          = 0   // the root thread's last stop reason counts as success
	exitFailure     = 1   // it is a failure (step_error, session_fail, max_*_steps, aborted, …)
	exitUsage       = 2   // bad flag, unknown agent, unreadable file
	exitDefinitions = 3   // invalid definitions
	exitCreation    = 4   // thread creation failed (missing required variables, invalid arguments)
	exitScript      = 5   // model script mismatch, or a secret caught by the last redaction pass
	exitInterrupted = 130 // SIGINT; the run is stopped first
)

// exitError carries the process exit code with the error that caused it.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exit wraps err with an exit code; a nil err means "exit with code, message already printed".
func exit(code int, err error) error { return &exitError{code: code, err: err} }

// globals are the flags every command shares.
type globals struct {
	dir      string
	logLevel string
	noColor  bool
	// server and apiKey make threads, logs and run clients of a weft serve API.
	server, apiKey string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the CLI and returns the exit code; it is main without the process.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// The project's .env is read first, so that flag defaults taken from the environment see it.
	err := loadProjectDotenv(dirArg(args))
	if err == nil {
		root := newRootCmd(stdin, stdout, stderr)
		root.SetArgs(args)
		err = root.ExecuteContext(ctx)
	}
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "weft: %v\n", ee.err)
		}
		return ee.code
	}
	// Errors from cobra itself: unknown commands and flags, wrong argument counts.
	fmt.Fprintf(stderr, "weft: %v\n", err)
	return exitUsage
}

func newRootCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "weft",
		Short: "Weft runs AI agents defined in Go or in plain files",
		Long: `Weft is a runtime for AI agents that implements the Standard Agents specification
(prompts, tools, agents, models, hooks, threads, subagents) and reads Prompty prompts.

Definitions live in a project directory (default ./agents) with the folders models/,
providers/, prompts/, agents/ and tools/.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	root.SetVersionTemplate("weft {{.Version}}\n")
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	defDir := os.Getenv("WEFT_DIR")
	if defDir == "" {
		defDir = "agents"
	}
	root.PersistentFlags().StringVar(&g.dir, "dir", defDir, "project root holding the definitions (env WEFT_DIR)")
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "warn", "log level: debug, info, warn or error")
	root.PersistentFlags().BoolVar(&g.noColor, "no-color", false, "disable colored output")
	root.PersistentFlags().StringVar(&g.server, "server", "", "use a weft serve API at this URL instead of a local store (env WEFT_SERVER)")
	root.PersistentFlags().StringVar(&g.apiKey, "api-key", "", "API key for --server (env WEFT_API_KEY)")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return exit(exitUsage, err) })
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		switch strings.ToLower(g.logLevel) {
		case "debug", "info", "warn", "warning", "error":
			return nil
		}
		return exit(exitUsage, fmt.Errorf("--log-level %q: want debug, info, warn or error", g.logLevel))
	}
	root.AddCommand(newValidateCmd(g), newInitCmd(g), newRunCmd(g), newChatCmd(g), newRenderCmd(g), newThreadsCmd(g), newLogsCmd(g), newServeCmd(g), newInspectCmd(g), newMCPCmd(g), newA2ACmd(g), newKeysCmd(), newEnvCmd(), newDBCmd(), newEvalCmd(g))
	refuseUnknownSubcommands(root)
	return root
}
