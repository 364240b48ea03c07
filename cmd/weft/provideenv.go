package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/providers"
)

// newProvideEnvCmd builds `weft threads provide-env THREAD REQUEST NAME=VALUE…`: the values a
// subagent's bootstrap asked for (error subagent_env_required) are stored, the subagent starts,
// and the command waits until the thread tree is quiet and prints the parent's latest reply.
func newProvideEnvCmd(g *globals, db *string) *cobra.Command {
	var script string
	c := &cobra.Command{
		Use: "provide-env THREAD REQUEST NAME=VALUE...", Args: cobra.MinimumNArgs(3),
		Short: "Provide the variables a subagent asked for, and let it run",
		RunE: func(cmd *cobra.Command, a []string) error {
			ctx := cmd.Context()
			env := map[string]string{}
			for _, kv := range a[2:] {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return exit(exitUsage, fmt.Errorf("%q: want NAME=value", kv))
				}
				env[k] = v
			}
			if rc := remoteOf(g); rc != nil {
				return rc.provideEnv(cmd, a[0], a[1], env)
			}
			reg, err := loadProject(g.dir)
			if err != nil {
				return err
			}
			sc, err := loadScript(script)
			if err != nil {
				return err
			}
			st, err := openExisting(cmd, *db)
			if err != nil {
				return err
			}
			defer st.Close()
			log := newLogger(g.logLevel, os.Stderr)
			mcpClient := newMCPClient(reg, log)
			defer mcpClient.Close()
			opt := engine.Options{Registry: reg, Store: st, Logger: log, Providers: providers.Cache(providers.Options{Registry: reg}), MCP: mcpClient}
			obs, flush, err := telemetry(ctx, log)
			if err != nil {
				return err
			}
			defer flush()
			if obs != nil {
				opt.Observer = obs
			}
			if sc != nil {
				opt.Override, opt.Clock = sc, sc.Clock()
			}
			eng, err := engine.New(opt)
			if err != nil {
				return exit(exitFailure, err)
			}
			done, err := eng.ProvideEnv(ctx, a[0], a[1], env)
			if err != nil {
				return exit(threadExit(err), err)
			}
			eng.Wait() // the subagent's run, its report and the parent run the report starts
			fmt.Fprintf(cmd.OutOrStdout(), "subagent %s started\n", done.ChildThreadID)
			msgs, err := st.Messages(ctx, a[0], weft.MessageQuery{Limit: 200})
			if err == nil {
				if text := resultText(msgs); text != "" {
					redact, _ := engine.StoreRedactor(ctx, st, a[0])
					if redact != nil {
						text = redact(text)
					}
					fmt.Fprintln(cmd.OutOrStdout(), text)
				}
			}
			return nil
		},
	}
	c.Flags().StringVar(&script, "model-script", os.Getenv("WEFT_MODEL_SCRIPT"), "answer every model call from this script (env WEFT_MODEL_SCRIPT)")
	return c
}
