package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	weval "github.com/weft-agents/weft/eval"
)

type evalFlags struct {
	db, script, junit, baseline string
	record, replay, model       string
	asJSON                      bool
	timeout                     time.Duration
}

func newEvalCmd(g *globals) *cobra.Command {
	f := &evalFlags{}
	c := &cobra.Command{
		Use:   "eval [FILE|DIR]",
		Short: "Run eval files: an agent's cases, checked against expectations, as threads",
		Long: `Run the eval files FILE, or every *.yaml and *.yml file of DIR (default: evals/ beside the
definitions directory). Each case runs as a thread tagged with the eval run; the run is stored
and compared with a baseline run (the previous run of the same eval by default). See docs/evals.md.

Exit status: 0 every case passed, 1 a case failed, 2 an invalid eval file or usage,
3 invalid definitions.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runEval(cmd, g, f, args) },
	}
	fl := c.Flags()
	fl.StringVar(&f.db, "db", defaultDB(), "store of the case threads and eval runs: SQLite file, postgres:// URL or :memory: (env WEFT_DB)")
	fl.StringVar(&f.script, "model-script", os.Getenv("WEFT_MODEL_SCRIPT"), "answer every model call from this script (cases then run one at a time)")
	fl.BoolVar(&f.asJSON, "json", false, "print the reports as JSON")
	fl.StringVar(&f.junit, "junit", "", "write a JUnit XML report to FILE")
	fl.StringVar(&f.baseline, "baseline", "", "compare with this eval run (default: the eval's previous run)")
	fl.StringVar(&f.record, "record", "", "keep every model response of the run in FILE")
	fl.StringVar(&f.replay, "replay", "", "answer every model call from FILE (written by --record); no network")
	fl.StringVar(&f.model, "model", "", "run every prompt with this model instead of its own")
	fl.DurationVar(&f.timeout, "timeout", 10*time.Minute, "wall-clock limit of each turn")
	return c
}

// evalsDir is the project's evals directory: evals/ beside the definitions directory.
func evalsDir(defs string) string { return filepath.Join(filepath.Dir(filepath.Clean(defs)), "evals") }

// serverEvals runs eval files for weft serve's POST /api/evals with the newest engine's options:
// the case threads are the server's threads, their events reach the inspector.
type serverEvals struct {
	dir string
	opt *atomic.Pointer[engine.Options]
}

// Run runs an eval file of the evals directory (or content posted as that file), compares it with
// the eval's previous run and stores it.
func (s *serverEvals) Run(ctx context.Context, file string, content []byte) (*weval.Report, error) {
	if file == "" {
		file = "posted.yaml"
	}
	if !filepath.IsLocal(file) {
		return nil, weft.Errorf(weft.EInvalid, "file %q: name a file inside the evals directory", file)
	}
	path := filepath.Join(s.dir, file)
	var ef *weval.File
	var err error
	if len(content) > 0 {
		ef, err = weval.Parse(path, content)
	} else {
		ef, err = weval.Load(path)
	}
	if err != nil {
		return nil, err
	}
	rn := &weval.Runner{Options: *s.opt.Load()}
	rep, err := rn.Run(ctx, ef)
	if err != nil {
		return nil, err
	}
	if err := compareEval(ctx, rn.Options.Store, rep, ""); err != nil {
		return nil, err
	}
	if _, err := weval.SaveRun(context.WithoutCancel(ctx), rn.Options.Store, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// evalFiles lists the eval files a path names: the file, or a directory's YAML files.
func evalFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, exit(exitUsage, fmt.Errorf("eval files: %s: %w", path, unwrapPath(err)))
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, exit(exitUsage, err)
	}
	var out []string
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
			out = append(out, filepath.Join(path, e.Name()))
		}
	}
	if len(out) == 0 {
		return nil, exit(exitUsage, fmt.Errorf("no eval files (*.yaml, *.yml) in %s", path))
	}
	return out, nil
}

func runEval(cmd *cobra.Command, g *globals, f *evalFlags, args []string) error {
	ctx := cmd.Context()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if f.record != "" && f.replay != "" {
		return exit(exitUsage, errors.New("--record and --replay exclude each other"))
	}
	path := evalsDir(g.dir)
	if len(args) == 1 {
		path = args[0]
	}
	paths, err := evalFiles(path)
	if err != nil {
		return err
	}
	var files []*weval.File
	var bad []string
	for _, p := range paths {
		ef, err := weval.Load(p)
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		files = append(files, ef)
	}
	if len(bad) > 0 {
		return exit(exitUsage, errors.New(strings.Join(bad, "\n")))
	}
	reg, err := loadProject(g.dir)
	if err != nil {
		return err
	}
	if f.model != "" {
		if err := weval.UseModel(reg, f.model); err != nil {
			return exit(exitUsage, fmt.Errorf("--model: %w", err))
		}
	}
	rn := &weval.Runner{Model: f.model, Timeout: f.timeout}
	if f.replay != "" {
		if rn.Replay, err = weval.LoadRecording(f.replay); err != nil {
			return exit(exitUsage, fmt.Errorf("--replay: %w", err))
		}
	}
	if f.record != "" {
		rn.Record = weval.NewRecording()
	}
	log := newLogger(g.logLevel, os.Stderr)
	rt, err := openLocal(ctx, reg, f.db, f.script, log, nil)
	if err != nil {
		return err
	}
	defer rt.Close()
	rn.Options = rt.opt
	if isTerminal(stderr) && !f.asJSON {
		rn.OnRun = func(done, total int, r *weval.CaseRun) {
			v := "pass"
			if !r.Pass {
				v = "FAIL"
			}
			fmt.Fprintf(stderr, "\r\033[K[%d/%d] %s #%d %s", done, total, r.Case, r.Repetition, v)
			if done == total {
				fmt.Fprintln(stderr)
			}
		}
	}
	var reports []*weval.Report
	for _, ef := range files {
		rep, err := rn.Run(ctx, ef)
		if err != nil {
			var fe *weval.FileError
			if errors.As(err, &fe) {
				return exit(exitUsage, err)
			}
			return exit(exitFailure, err)
		}
		if err := compareEval(ctx, rt.store, rep, f.baseline); err != nil {
			return err
		}
		if _, err := weval.SaveRun(ctx, rt.store, rep); err != nil {
			return exit(exitFailure, err)
		}
		reports = append(reports, rep)
	}
	if rn.Record != nil {
		if err := rn.Record.Save(f.record); err != nil {
			return exit(exitFailure, fmt.Errorf("--record: %w", unwrapPath(err)))
		}
	}
	if f.junit != "" {
		if err := writeJUnit(f.junit, reports); err != nil {
			return exit(exitFailure, fmt.Errorf("--junit: %w", unwrapPath(err)))
		}
	}
	ok := !slices.ContainsFunc(reports, func(r *weval.Report) bool { return !r.OK() })
	if f.asJSON {
		b, _ := json.MarshalIndent(map[string]any{"ok": ok, "reports": reports}, "", "  ")
		fmt.Fprintln(stdout, string(b))
	} else {
		for i, r := range reports {
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			r.WriteTable(stdout)
		}
	}
	if !ok {
		return exit(exitFailure, nil)
	}
	return nil
}

// compareEval sets a report's baseline: the run --baseline names, else the eval's previous run.
func compareEval(c context.Context, st weft.Store, rep *weval.Report, baseline string) error {
	var base *weval.Report
	if baseline != "" {
		b, err := weval.LoadRun(c, st, baseline)
		if err != nil {
			return exit(exitUsage, fmt.Errorf("--baseline: %w", err))
		}
		base = b
	} else {
		prev, err := weval.Runs(c, st, rep.Name, 1)
		if err != nil {
			return exit(exitFailure, err)
		}
		if len(prev) > 0 {
			base = prev[0]
		}
	}
	if base != nil {
		rep.Baseline = weval.Compare(rep, base)
	}
	return nil
}

func writeJUnit(path string, reports []*weval.Report) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := weval.WriteJUnit(fh, reports); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}
