package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/project"
	"github.com/weft-agents/weft/scripted"
)

func newRenderCmd(g *globals) *cobra.Command {
	var env, argPairs []string
	var argsJSON, thread, db string
	var asJSON, tools bool
	c := &cobra.Command{
		Use:   "render PROMPT|FILE.prompty",
		Short: "Print the messages and tools a prompt sends to the model",
		Long: `Render PROMPT as the model would receive it: the system prompt, the template's messages and the
offered tools (MCP servers are started to list theirs). Missing arguments of a .prompty prompt take their samples. With --thread the next
step of that thread is rendered with its history, kept inside the model's window as a run keeps
it, followed by what was left out of it and why (the context strategy: messages cut by the window,
the summary that stands for older ones, messages the step will fold into the summary). Secrets
print as [redacted].

A path to a .prompty file renders that file on its own, inside a project or not: its model comes
from its own front matter (model.configuration or model.provider; none needed to preview) and
missing arguments take the samples of its inputs or of its top-level sample:.

Exit status: 0 rendered, 2 usage (unknown prompt or thread), 3 invalid definitions or a template
error, 4 invalid arguments.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			reg, name, err := renderRegistry(g.dir, a[0])
			if err != nil {
				return err
			}
			envMap, err := parseEnv(env, "")
			if err != nil {
				return exit(exitUsage, err)
			}
			args, err := parseArgs(argPairs, argsJSON)
			if err != nil {
				return exit(exitUsage, err)
			}
			log := newLogger(g.logLevel, os.Stderr)
			store, err := openStore(cmd.Context(), db, log, nil)
			if err != nil {
				return exit(exitUsage, err)
			}
			defer store.Close()
			// MCP servers are started to list their tools, as a run would offer them.
			client := newMCPClient(reg, log)
			defer client.Close()
			eng, err := engine.New(engine.Options{Registry: reg, Store: store, Logger: log, Override: scripted.New(nil), MCP: client})
			if err != nil {
				return exit(exitFailure, err)
			}
			rendered, err := eng.Render(cmd.Context(), engine.PreviewInput{Prompt: name, Args: args, Env: envMap, ThreadID: thread})
			if err != nil {
				switch weft.ErrorCode(err) {
				case weft.EInvalid, weft.EMissingVariables:
					// The same refusal, and exit status, as weft run's.
					if strings.Contains(err.Error(), "arguments of prompt") {
						err = fmt.Errorf("%w (give them with --arg NAME=VALUE; in a .prompty file, an input's sample: fills a preview)", err)
					}
					return exit(exitCreation, err)
				case weft.ENotFound:
					return exit(exitUsage, err)
				}
				return exit(exitDefinitions, err)
			}
			req := rendered.Request
			// What the window left out is told for a thread's history, which is what it cuts.
			var report *engine.ContextReport
			if thread != "" {
				report = &rendered.Context
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeRenderJSON(out, req, report)
			}
			if tools {
				b, _ := json.MarshalIndent(toolList(req), "", "  ")
				fmt.Fprintln(out, string(b))
				return nil
			}
			writeRenderText(out, req)
			if report != nil {
				fmt.Fprintf(out, "\ncontext (%s): %s\n", report.Strategy, report.Reason)
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.StringArrayVar(&argPairs, "arg", nil, "argument K=V (V parsed as JSON when it parses; repeatable)")
	fl.StringVar(&argsJSON, "args", "", "arguments as a JSON object")
	fl.StringArrayVar(&env, "env", nil, "env value K=V (repeatable)")
	fl.StringVar(&thread, "thread", "", "render the next step of this thread (needs --db)")
	fl.StringVar(&db, "db", envOr("WEFT_DB", ":memory:"), "store holding --thread (env WEFT_DB)")
	fl.BoolVar(&asJSON, "json", false, `print {"messages": [...], "tools": [...]}`)
	fl.BoolVar(&tools, "tools", false, "print the offered tools' schemas")
	return c
}

// renderRegistry returns the registry and prompt name that `weft render` renders: a .prompty
// file given by path on its own, else the prompt of that name in the project of dir.
func renderRegistry(dir, arg string) (*weft.Registry, string, error) {
	if strings.EqualFold(filepath.Ext(arg), ".prompty") {
		if st, err := os.Stat(arg); err == nil && !st.IsDir() {
			// A preview calls no model: a front-matter ${env:NAME} that is not set (an endpoint, a
			// key) reads as that text instead of failing, as Prompty users preview a file.
			lookup := func(name string) (string, bool) {
				if v, ok := os.LookupEnv(name); ok {
					return v, true
				}
				return "${env:" + name + "}", true
			}
			reg, name, diags := project.OpenPrompty(arg, project.Options{LookupEnv: lookup})
			if diags.HasErrors() {
				return nil, "", exit(exitDefinitions, diags.Err())
			}
			return reg, name, nil
		}
	}
	reg, err := loadProject(dir)
	if err != nil {
		return nil, "", err
	}
	if _, ok := reg.Prompt(arg); !ok {
		return nil, "", exit(exitUsage, fmt.Errorf("no prompt named %q in %s", arg, dir))
	}
	return reg, arg, nil
}

type renderedTool struct {
	Name        string       `json:"name"`
	Description string       `json:"description"`
	Parameters  *weft.Schema `json:"parameters"`
}

func toolList(req *weft.Request) []renderedTool {
	out := make([]renderedTool, 0, len(req.Tools))
	for _, t := range req.Tools {
		out = append(out, renderedTool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	return out
}

func writeRenderJSON(w io.Writer, req *weft.Request, report *engine.ContextReport) error {
	doc := struct {
		Messages []weft.LLMMessage `json:"messages"`
		Tools    []renderedTool    `json:"tools"`
		// Output is the structured answer's shape, for a prompt with an output schema.
		Output *weft.OutputSpec `json:"output,omitempty"`
		// Context says what the request left out of the thread's history, and why (--thread).
		Context *engine.ContextReport `json:"context,omitempty"`
	}{Messages: req.Messages, Tools: toolList(req), Output: req.Output, Context: report}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// writeRenderText prints each message under a role header, and the offered tools' names.
func writeRenderText(w io.Writer, req *weft.Request) {
	for i, m := range req.Messages {
		if i > 0 {
			fmt.Fprintln(w)
		}
		head := string(m.Role)
		if m.Name != "" {
			head += fmt.Sprintf("[name=%q]", m.Name)
		}
		if m.ToolCallID != "" {
			head += fmt.Sprintf("[tool_call_id=%q]", m.ToolCallID)
		}
		fmt.Fprintln(w, head+":")
		if text := m.Text(); text != "" {
			fmt.Fprintln(w, text)
		}
		for _, p := range m.Parts {
			if p.Type != weft.PartText {
				fmt.Fprintf(w, "[%s %s]\n", p.Type, shortURL(p.URL))
			}
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(w, "→ %s(%s) id=%s\n", c.Name, c.Arguments, c.ID)
		}
	}
	if len(req.Tools) > 0 {
		names := make([]string, len(req.Tools))
		for i, t := range req.Tools {
			names[i] = t.Name
		}
		fmt.Fprintf(w, "\ntools (%s): %s\n", req.ToolChoice, strings.Join(names, ", "))
	}
}

func shortURL(u string) string {
	if strings.HasPrefix(u, "data:") && len(u) > 48 {
		return u[:48] + "…"
	}
	return u
}
