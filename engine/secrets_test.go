package engine_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/internal/pgtest"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/scripted"
	"github.com/weft-agents/weft/sqlite"
)

// secretNodes are two handles on one store, as two processes sharing it have (a server and a CLI
// on one SQLite file; two nodes on one PostgreSQL database): memstore's one handle, SQLite's file
// opened twice, and PostgreSQL when WEFT_TEST_POSTGRES_URL is set.
var secretNodes = []struct {
	name string
	open func(t *testing.T) (a, b weft.Store)
}{
	{"memstore", func(t *testing.T) (weft.Store, weft.Store) {
		st, err := memstore.New(memstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st, st
	}},
	{"sqlite", func(t *testing.T) (weft.Store, weft.Store) {
		path := filepath.Join(t.TempDir(), "weft.db")
		var sts [2]weft.Store
		for i := range sts {
			st, err := sqlite.Open(context.Background(), path, sqlite.Options{Key: make([]byte, 32)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			sts[i] = st
		}
		return sts[0], sts[1]
	}},
	{"postgres", func(t *testing.T) (weft.Store, weft.Store) {
		_, dsn := pgtest.Schema(t)
		return openPostgres(t, dsn), openPostgres(t, dsn)
	}},
}

// TestRedactorFollowsSecretsSetElsewhere: a thread's redactor is cached, yet a secret set or
// removed through another handle on the store (another node) — in the thread's own layer, its
// parent's, its owner's or the instance's — is redacted, or no longer, by this engine's next read.
func TestRedactorFollowsSecretsSetElsewhere(t *testing.T) {
	for _, n := range secretNodes {
		t.Run(n.name, func(t *testing.T) {
			here, there := n.open(t)
			ctx := context.Background()
			eng, err := engine.New(engine.Options{Registry: registry(nil, nil), Store: here, Override: scripted.New(&scripted.Script{})})
			if err != nil {
				t.Fatal(err)
			}
			parent, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant", UserID: "u1", Env: map[string]string{"OWN": "own-secret-1"}})
			if err != nil {
				t.Fatal(err)
			}
			child := &weft.Thread{Agent: "assistant", UserID: "u1", ParentID: parent.ID}
			if err := here.CreateThread(ctx, child, nil); err != nil {
				t.Fatal(err)
			}
			text := "own-secret-1 own-secret-2 parent-secret user-secret instance-secret"
			read := func(id string) string {
				t.Helper()
				red, err := eng.Redactor(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				return red(text)
			}
			want := func(id, got, want string) {
				t.Helper()
				if got != want {
					t.Errorf("thread %s reads\n%q, want\n%q", id, got, want)
				}
			}
			want(parent.ID, read(parent.ID), "[redacted] own-secret-2 parent-secret user-secret instance-secret")
			set := func(scope weft.EnvScope, owner string, v weft.EnvValue) {
				t.Helper()
				if err := there.SetEnv(ctx, scope, owner, []weft.EnvValue{v}); err != nil {
					t.Fatal(err)
				}
			}
			set(weft.EnvThread, parent.ID, weft.EnvValue{Name: "OWN2", Value: "own-secret-2"})
			want(parent.ID, read(parent.ID), "[redacted] [redacted] parent-secret user-secret instance-secret")
			set(weft.EnvThread, parent.ID, weft.EnvValue{Name: "PARENT", Value: "parent-secret", Type: weft.VarSecret})
			set(weft.EnvUser, "u1", weft.EnvValue{Name: "USER", Value: "user-secret"})
			set(weft.EnvInstance, "", weft.EnvValue{Name: "INSTANCE", Value: "instance-secret"})
			want(child.ID, read(child.ID), strings.Repeat("[redacted] ", 4)+"[redacted]")
			set(weft.EnvThread, parent.ID, weft.EnvValue{Name: "OWN2", Delete: true})
			set(weft.EnvInstance, "", weft.EnvValue{Name: "INSTANCE", Value: "instance-public", Type: weft.VarText})
			want(child.ID, read(child.ID), "[redacted] own-secret-2 [redacted] [redacted] instance-secret")
		})
	}
}

// BenchmarkRedactor is what a read of a thread with three secrets (its own, its owner's, the
// instance's) pays for its redactor, on SQLite: the GET of a page of messages asks for one.
func BenchmarkRedactor(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "weft.db"), sqlite.Options{Key: make([]byte, 32)})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	eng, err := engine.New(engine.Options{Registry: registry(nil, nil), Store: st, Override: scripted.New(&scripted.Script{})})
	if err != nil {
		b.Fatal(err)
	}
	th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant", UserID: "u1", Env: map[string]string{"TOKEN": "sk-thread-secret"}})
	if err != nil {
		b.Fatal(err)
	}
	for scope, owner := range map[weft.EnvScope]string{weft.EnvUser: "u1", weft.EnvInstance: ""} {
		if err := st.SetEnv(ctx, scope, owner, []weft.EnvValue{{Name: "K_" + string(scope), Value: "secret-of-" + string(scope)}}); err != nil {
			b.Fatal(err)
		}
	}
	text := "a message that mentions sk-thread-secret once"
	for b.Loop() {
		red, err := eng.Redactor(ctx, th.ID)
		if err != nil {
			b.Fatal(err)
		}
		if red(text) == text {
			b.Fatal("not redacted")
		}
	}
}
