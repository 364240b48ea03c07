package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/httpapi"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/project"
)

// downStore is a store whose reads fail as a database that is down fails, and that tells those
// failures apart (weft.UnavailableTeller), as the SQLite and PostgreSQL stores do.
type downStore struct {
	*memstore.Store
	down atomic.Pointer[error] // nil = up
}

func (d *downStore) fault() error {
	if p := d.down.Load(); p != nil {
		return *p
	}
	return nil
}

func (d *downStore) Thread(ctx context.Context, id string) (*weft.Thread, error) {
	if err := d.fault(); err != nil {
		return nil, fmt.Errorf("store: thread %s: %w", id, err)
	}
	return d.Store.Thread(ctx, id)
}

func (d *downStore) Threads(ctx context.Context, q weft.ThreadQuery) ([]*weft.Thread, int, error) {
	if err := d.fault(); err != nil {
		return nil, 0, fmt.Errorf("store: threads: %w", err)
	}
	return d.Store.Threads(ctx, q)
}

var errRefused = syscall.ECONNREFUSED

func (d *downStore) Unavailable(err error) bool { return errors.Is(err, errRefused) }

// TestStoreUnavailableIs503: while the store is unavailable (refused connection; a full disk),
// requests are answered 503 store_unavailable with Retry-After, never 500 internal; once it
// answers again so do they (issue 47, row 10).
func TestStoreUnavailableIs503(t *testing.T) {
	reg, diags := project.Open("testdata/agents", project.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	mem, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	st := &downStore{Store: mem}
	eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: &fakeModel{}})
	if err != nil {
		t.Fatal(err)
	}
	api := httpapi.New(httpapi.Options{Engine: eng, NoAuth: true})
	srv := httptest.NewServer(api.Handler())
	defer srv.Close()
	get := func(path string) *http.Response {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	cases := []struct {
		name string
		err  error
	}{
		{"refused", errRefused},
		{"disk full", fmt.Errorf("database or disk is full: %w", weft.ErrUnavailable)},
		{"coded", &weft.Error{Code: weft.EUnavailable, Message: "restarting"}},
	}
	for _, c := range cases {
		st.down.Store(&c.err)
		for _, path := range []string{"/api/threads", "/api/threads/thr_x", "/api/threads/thr_x/messages"} {
			resp := get(path)
			if ra, _ := strconv.Atoi(resp.Header.Get("Retry-After")); resp.StatusCode != 503 || ra < 1 {
				t.Errorf("%s: GET %s: %d, Retry-After %q; want 503 with Retry-After", c.name, path, resp.StatusCode, resp.Header.Get("Retry-After"))
			}
		}
	}
	st.down.Store(nil)
	if resp := get("/api/threads"); resp.StatusCode != 200 {
		t.Fatalf("store back: %d", resp.StatusCode)
	}
	// Any other failure stays an internal error.
	bug := errors.New("a bug")
	st.down.Store(&bug)
	if resp := get("/api/threads"); resp.StatusCode != 500 {
		t.Fatalf("a bug: %d, want 500", resp.StatusCode)
	}
}
