package storetest

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
)

func testEnv(t *testing.T, s weft.Store) {
	ctx := t.Context()
	set := func(scope weft.EnvScope, owner string, vs ...weft.EnvValue) {
		t.Helper()
		if err := s.SetEnv(ctx, scope, owner, vs); err != nil {
			t.Fatalf("SetEnv: %v", err)
		}
	}
	get := func(scope weft.EnvScope, owner string) string {
		t.Helper()
		vs, err := s.Env(ctx, scope, owner)
		if err != nil {
			t.Fatalf("Env: %v", err)
		}
		var b []string
		for _, v := range vs {
			if v.UpdatedAt.IsZero() || v.Delete {
				t.Errorf("value %s: %+v", v.Name, v)
			}
			b = append(b, v.Name+"="+v.Value+":"+string(v.Type))
		}
		return strings.Join(b, " ")
	}
	set(weft.EnvUser, "u1", weft.EnvValue{Name: "B", Value: "text-b", Type: weft.VarText},
		weft.EnvValue{Name: "A", Value: "sk-secret-a", Type: weft.VarSecret}, weft.EnvValue{Name: "C", Value: "untyped"})
	if got := get(weft.EnvUser, "u1"); got != "A=sk-secret-a:secret B=text-b:text C=untyped:secret" {
		t.Errorf("user env: %s", got)
	}
	set(weft.EnvUser, "u1", weft.EnvValue{Name: "A", Value: "sk-rotated", Type: weft.VarSecret}, weft.EnvValue{Name: "B", Delete: true},
		weft.EnvValue{Name: "unicode", Value: "ключ ✓", Type: weft.VarText})
	if got := get(weft.EnvUser, "u1"); got != "A=sk-rotated:secret C=untyped:secret unicode=ключ ✓:text" {
		t.Errorf("user env after update: %s", got)
	}
	if got := get(weft.EnvUser, "u2"); got != "" {
		t.Errorf("other user sees %s", got)
	}
	set(weft.EnvInstance, "", weft.EnvValue{Name: "A", Value: "instance", Type: weft.VarText})
	if got := get(weft.EnvInstance, ""); got != "A=instance:text" {
		t.Errorf("instance env: %s", got)
	}
	th := &weft.Thread{Agent: "agent"}
	if err := s.CreateThread(ctx, th, []weft.EnvValue{{Name: "T", Value: "thread-value", Type: weft.VarSecret}}); err != nil {
		t.Fatal(err)
	}
	if got := get(weft.EnvThread, th.ID); got != "T=thread-value:secret" {
		t.Errorf("thread env from CreateThread: %s", got)
	}
	wantCode(t, "unknown scope", s.SetEnv(ctx, "galaxy", "x", []weft.EnvValue{{Name: "A", Value: "v"}}), weft.EInvalid)
	wantCode(t, "unknown type", s.SetEnv(ctx, weft.EnvUser, "u1", []weft.EnvValue{{Name: "A", Value: "v", Type: "number"}}), weft.EInvalid)
	wantCode(t, "empty name", s.SetEnv(ctx, weft.EnvUser, "u1", []weft.EnvValue{{Value: "v"}}), weft.EInvalid)
	bad := &weft.Thread{Agent: "agent"}
	if err := s.CreateThread(ctx, bad, []weft.EnvValue{{Name: "", Value: "v"}}); err == nil {
		t.Error("CreateThread accepted an env value without a name")
	} else if _, err := s.Thread(ctx, bad.ID); !errors.Is(err, weft.ErrNotFound) {
		t.Errorf("failed CreateThread stored the thread: %v", err)
	}
}

// sameEnv compares env values, times by instant.
func sameEnv(a, b []weft.EnvValue) bool {
	return slices.EqualFunc(a, b, func(x, y weft.EnvValue) bool {
		return x.Name == y.Name && x.Value == y.Value && x.Type == y.Type && x.Delete == y.Delete && x.UpdatedAt.Equal(y.UpdatedAt)
	})
}
