package main

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/weft-agents/weft/project"
)

//go:embed all:scaffold
var scaffold embed.FS

func newInitCmd(g *globals) *cobra.Command {
	var force bool
	c := &cobra.Command{
		Use:   "init [DIR]",
		Short: "Scaffold a small project with a working example agent",
		Long: `Create DIR (default: the current directory) with agents/{models,prompts,agents,tools}
holding an example assistant agent, a model script examples/hello.script.yaml to run it offline,
a README.md saying what each file is, and .env.example (copied to .env, it is read at start). A non-empty DIR is refused unless --force is given.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			if !force {
				entries, err := os.ReadDir(dir)
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					return exit(exitUsage, fmt.Errorf("cannot read %s: %w", dir, unwrapPath(err)))
				}
				if len(entries) > 0 {
					return exit(exitUsage, fmt.Errorf("%s is not empty; use --force to write into it", dir))
				}
			}
			n, err := writeScaffold(dir)
			if err != nil {
				return exit(exitFailure, err)
			}
			// The scaffold must validate; a failure here is a bug in Weft, not in the user's input.
			if _, diags := project.Open(filepath.Join(dir, "agents"), project.Options{}); diags.HasErrors() {
				return exit(exitFailure, fmt.Errorf("the scaffold does not validate:\n%v", diags.Err()))
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Created %d files in %s.\n\nNext:\n", n, dir)
			if dir != "." {
				fmt.Fprintf(out, "  cd %s\n", dir)
			}
			fmt.Fprintln(out, "  weft validate")
			fmt.Fprintln(out, `  weft run assistant "What time is it?" --model-script examples/hello.script.yaml`)
			return nil
		},
	}
	c.Flags().BoolVar(&force, "force", false, "write into a non-empty directory, overwriting scaffold files")
	return c
}

// writeScaffold copies the embedded scaffold into dir and returns how many files it wrote.
func writeScaffold(dir string) (int, error) {
	n := 0
	err := fs.WalkDir(scaffold, "scaffold", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("scaffold", p)
		target := filepath.Join(dir, rel)
		if e.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := scaffold.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			return err
		}
		n++
		return nil
	})
	return n, err
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
