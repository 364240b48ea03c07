package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/project"
)

func newValidateCmd(g *globals) *cobra.Command {
	var strict, asJSON, withMCP, withA2A bool
	c := &cobra.Command{
		Use:   "validate",
		Short: "Load and validate all definitions",
		Long: `Load every definition under --dir and check it: required fields, references between
definitions, argument schemas, tool entries against their targets, include cycles, variables and
unknown keys. Every problem is printed as "file: field: message", errors first, then warnings.

Exit status: 0 valid (warnings alone are fine), 2 the directory cannot be read,
3 invalid definitions (with --strict, warnings count as errors).

With --mcp the declared MCP servers that need no thread variable are started too, and their
tools checked: a server that cannot start and an mcp:SERVER/TOOL entry the server does not list
are errors; a tool whose input schema is outside the subset Weft checks (it is not offered) and
an allow-list name the server does not list are warnings.

With --a2a the card of every kind: a2a tool is fetched (with its headers) and checked: a card that
cannot be fetched or has no JSON-RPC interface is an error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := os.Stat(g.dir); err != nil {
				return exit(exitUsage, fmt.Errorf("cannot read the definitions directory %s: %w", g.dir, unwrapPath(err)))
			}
			reg, diags := project.Open(g.dir, project.Options{})
			if withMCP && !diags.HasErrors() {
				client := newMCPClient(reg, newLogger(g.logLevel, os.Stderr))
				diags = project.Sort(append(diags, checkMCP(cmd.Context(), client, reg)...))
				client.Close()
			}
			if withA2A && !diags.HasErrors() {
				diags = project.Sort(append(diags, checkA2A(cmd.Context(), reg)...))
			}
			failed := diags.HasErrors() || (strict && len(diags.Warnings()) > 0)
			if asJSON {
				writeDiagnosticsJSON(cmd.OutOrStdout(), diags, failed, strict)
			} else {
				writeDiagnostics(cmd.OutOrStdout(), cmd.ErrOrStderr(), fromHere(g.dir, diags), strict)
			}
			if failed {
				return exit(exitDefinitions, nil)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&strict, "strict", false, "treat warnings as errors")
	c.Flags().BoolVar(&withMCP, "mcp", false, "also start the declared MCP servers and check their tools")
	c.Flags().BoolVar(&withA2A, "a2a", false, "also fetch and check the agent card of every kind: a2a tool")
	c.Flags().BoolVar(&asJSON, "json", false, `print {"ok", "errors": [{file, path, message}], "warnings": [...]}`)
	return c
}

// writeDiagnostics prints one line per problem on out and a summary on errOut.
func writeDiagnostics(out, errOut io.Writer, diags weft.Diagnostics, strict bool) {
	errs, warns := diags.Errors(), diags.Warnings()
	for _, d := range errs {
		fmt.Fprintln(out, d.String())
	}
	prefix := "warning: "
	if strict {
		prefix = ""
	}
	for _, d := range warns {
		fmt.Fprintln(out, prefix+d.String())
	}
	switch {
	case len(errs) == 0 && len(warns) == 0:
		fmt.Fprintln(errOut, "definitions are valid")
	case len(errs) == 0 && !strict:
		fmt.Fprintf(errOut, "definitions are valid (%s)\n", plural(len(warns), "warning"))
	default:
		fmt.Fprintf(errOut, "%s, %s\n", plural(len(errs), "error"), plural(len(warns), "warning"))
	}
}

func writeDiagnosticsJSON(out io.Writer, diags weft.Diagnostics, failed, strict bool) {
	doc := struct {
		Version  string            `json:"version"`
		OK       bool              `json:"ok"`
		Errors   []weft.Diagnostic `json:"errors"`
		Warnings []weft.Diagnostic `json:"warnings"`
	}{Version: version(), OK: !failed, Errors: diags.Errors(), Warnings: diags.Warnings()}
	if doc.Errors == nil {
		doc.Errors = []weft.Diagnostic{}
	}
	if doc.Warnings == nil {
		doc.Warnings = []weft.Diagnostic{}
	}
	if strict {
		doc.Errors = append(doc.Errors, doc.Warnings...)
		doc.Warnings = []weft.Diagnostic{}
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	_ = enc.Encode(doc)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
