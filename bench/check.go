package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
)

// persister is implemented by runners that persist: how many messages thread i gained since
// Prepare.
type persister interface {
	Added(ctx context.Context, i int) (int, error)
}

// Check runs turns through a fresh runner of def and verifies that it did the turn's work: each
// turn's answer is Answer, the model was called twice and the tool once per turn, the model saw
// the tool's result, runners that persist hold the prior messages plus the turn's four, and
// arguments that break the schema never reach the tool. dir is a scratch directory.
func Check(ctx context.Context, def Def, dir, pgURL string) error {
	sub := func() string {
		d, err := os.MkdirTemp(dir, def.Name+"-")
		if err != nil {
			panic(err)
		}
		return d
	}
	if err := checkTurns(ctx, def, Config{Counts: &Counts{}, Dir: sub(), PostgresURL: pgURL}); err != nil {
		return fmt.Errorf("%s: %w", def.Name, err)
	}
	if err := checkBadArgs(ctx, def, Config{Counts: &Counts{}, Dir: sub(), PostgresURL: pgURL, BadArgs: true}); err != nil {
		return fmt.Errorf("%s, arguments outside the schema: %w", def.Name, err)
	}
	return nil
}

func checkTurns(ctx context.Context, def Def, cfg Config) (err error) {
	r, err := def.New(cfg)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, r.Close()) }()
	c := cfg.Counts
	// Three turns one after another, then a second batch of eight at once.
	for round, n := range []int{3, 8} {
		if err := r.Prepare(ctx, n); err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		before := c.ToolRuns.Load()
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			turn := func() {
				got, err := r.Turn(ctx, i)
				if err == nil && got != Answer {
					err = fmt.Errorf("answered %q, want %q", got, Answer)
				}
				errs[i] = err
			}
			if round == 0 {
				turn()
				continue
			}
			wg.Go(turn)
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		if got := c.ToolRuns.Load() - before; got != int64(n) {
			return fmt.Errorf("the tool ran %d times in %d turns", got, n)
		}
		if p, ok := r.(persister); ok {
			for i := range n {
				got, err := p.Added(ctx, i)
				if err != nil {
					return err
				}
				if got != 4 {
					return fmt.Errorf("thread %d gained %d stored messages in the turn, want 4", i, got)
				}
			}
		}
	}
	if got, want := c.ModelCalls.Load(), 2*c.ToolRuns.Load(); got != want {
		return fmt.Errorf("%d model calls for %d tool runs", got, c.ToolRuns.Load())
	}
	if n := c.Rejected.Load() + c.ToolErrors.Load(); n != 0 {
		return fmt.Errorf("the model was sent %d conversations it did not expect", n)
	}
	return nil
}

func checkBadArgs(ctx context.Context, def Def, cfg Config) (err error) {
	r, err := def.New(cfg)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, r.Close()) }()
	if err := r.Prepare(ctx, 1); err != nil {
		return err
	}
	_, turnErr := r.Turn(ctx, 0)
	if n := cfg.Counts.ToolRuns.Load(); n != 0 {
		return fmt.Errorf("the tool ran %d times", n)
	}
	// The runner either failed the turn or told the model, in the tool's message, what was wrong.
	if turnErr == nil && cfg.Counts.ToolErrors.Load() != 1 {
		return errors.New("the turn went on as if the call had succeeded")
	}
	return nil
}
