package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

// RunAuth runs the AuthStore contract. open must return a new, empty store on every call.
func RunAuth(t *testing.T, open func(t *testing.T) weft.AuthStore) {
	tests := []struct {
		name string
		fn   func(*testing.T, weft.AuthStore)
	}{
		{"Users", testUsers},
		{"Keys", testKeys},
		{"AccessTokens", testAccessTokens},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
}

func testUsers(t *testing.T, s weft.AuthStore) {
	ctx := context.Background()
	if _, err := s.User(ctx, "usr_missing"); weft.ErrorCode(err) != weft.ENotFound {
		t.Fatalf("unknown user: %v, want not found", err)
	}
	a := &weft.User{Name: "alice", IsAdmin: true}
	if err := s.CreateUser(ctx, a); err != nil {
		t.Fatal(err)
	}
	if a.ID == "" || a.CreatedAt.IsZero() {
		t.Fatalf("CreateUser did not fill ID and CreatedAt: %+v", a)
	}
	if err := s.CreateUser(ctx, &weft.User{Name: "alice"}); weft.ErrorCode(err) != weft.EConflict {
		t.Fatalf("taken name: %v, want conflict", err)
	}
	if err := s.CreateUser(ctx, &weft.User{Name: ""}); weft.ErrorCode(err) != weft.EInvalid {
		t.Fatalf("empty name: %v, want invalid", err)
	}
	b := &weft.User{Name: "bob"}
	if err := s.CreateUser(ctx, b); err != nil {
		t.Fatal(err)
	}
	got, err := s.User(ctx, a.ID)
	if err != nil || got.Name != "alice" || !got.IsAdmin {
		t.Fatalf("User(alice) = %+v, %v", got, err)
	}
	got, err = s.UserByName(ctx, "bob")
	if err != nil || got.ID != b.ID || got.IsAdmin {
		t.Fatalf("UserByName(bob) = %+v, %v", got, err)
	}
	all, err := s.Users(ctx)
	if err != nil || len(all) != 2 || all[0].Name != "alice" || all[1].Name != "bob" {
		t.Fatalf("Users = %+v, %v", all, err)
	}
}

func testKeys(t *testing.T, s weft.AuthStore) {
	ctx := context.Background()
	u := &weft.User{Name: "carol"}
	if err := s.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	_, orphan := weft.NewAPIKey("usr_nobody")
	if err := s.CreateKey(ctx, orphan); weft.ErrorCode(err) != weft.ENotFound {
		t.Fatalf("key of an unknown user: %v, want not found", err)
	}
	plain, k := weft.NewAPIKey(u.ID)
	if err := s.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	got, err := s.KeyByHash(ctx, weft.HashAPIKey(plain))
	if err != nil || got.ID != k.ID || got.UserID != u.ID {
		t.Fatalf("KeyByHash = %+v, %v", got, err)
	}
	if _, err := s.KeyByHash(ctx, weft.HashAPIKey(plain+"x")); weft.ErrorCode(err) != weft.ENotFound {
		t.Fatalf("wrong key: %v, want not found", err)
	}
	_, k2 := weft.NewAPIKey(u.ID)
	if err := s.CreateKey(ctx, k2); err != nil {
		t.Fatal(err)
	}
	ks, err := s.Keys(ctx, u.ID)
	if err != nil || len(ks) != 2 {
		t.Fatalf("Keys = %+v, %v", ks, err)
	}
	for _, x := range ks {
		if x.Hash == plain || x.Hint == plain {
			t.Fatal("a listing holds the key itself")
		}
	}
	if err := s.RevokeKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeKey(ctx, k.ID); err != nil {
		t.Fatalf("revoking twice: %v", err)
	}
	if err := s.RevokeKey(ctx, "key_missing"); weft.ErrorCode(err) != weft.ENotFound {
		t.Fatalf("revoking an unknown key: %v, want not found", err)
	}
	if _, err := s.KeyByHash(ctx, weft.HashAPIKey(plain)); weft.ErrorCode(err) != weft.ENotFound {
		t.Fatalf("revoked key: %v, want not found", err)
	}
	ks, _ = s.Keys(ctx, "")
	revoked := 0
	for _, x := range ks {
		if x.RevokedAt != nil {
			revoked++
		}
	}
	if len(ks) != 2 || revoked != 1 {
		t.Fatalf("all keys = %+v, want 2 with 1 revoked", ks)
	}
}

// testAccessTokens checks that an access token is found by its hash until it is revoked or its key
// is, that it needs a valid key of its own user, and that expired tokens are dropped.
func testAccessTokens(t *testing.T, s weft.AuthStore) {
	ctx := context.Background()
	u := &weft.User{Name: "dave"}
	other := &weft.User{Name: "erin"}
	for _, x := range []*weft.User{u, other} {
		if err := s.CreateUser(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	_, k := weft.NewAPIKey(u.ID)
	if err := s.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	tok := func(name string, exp time.Time) *weft.AccessToken {
		return &weft.AccessToken{Hash: weft.HashAPIKey(name), UserID: u.ID, KeyID: k.ID, Client: "inspector",
			Resource: "http://127.0.0.1:8080/mcp", CreatedAt: now, ExpiresAt: exp}
	}
	if err := s.CreateAccessToken(ctx, &weft.AccessToken{Hash: weft.HashAPIKey("x"), UserID: u.ID, KeyID: "key_missing",
		CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); weft.ErrorCode(err) != weft.ENotFound {
		t.Fatalf("token of an unknown key: %v, want not found", err)
	}
	if err := s.CreateAccessToken(ctx, &weft.AccessToken{Hash: weft.HashAPIKey("y"), UserID: other.ID, KeyID: k.ID,
		CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err == nil {
		t.Fatal("a token of another user's key was stored")
	}
	a := tok("a", now.Add(time.Hour))
	if err := s.CreateAccessToken(ctx, a); err != nil {
		t.Fatal(err)
	}
	got, err := s.AccessToken(ctx, a.Hash)
	if err != nil || got.UserID != u.ID || got.KeyID != k.ID || got.Resource != a.Resource || got.Client != "inspector" ||
		!got.ExpiresAt.Equal(a.ExpiresAt) || !got.CreatedAt.Equal(now) {
		t.Fatalf("AccessToken = %+v, %v; want %+v", got, err, a)
	}
	if _, err := s.AccessToken(ctx, weft.HashAPIKey("nope")); weft.ErrorCode(err) != weft.ENotFound {
		t.Fatalf("unknown token: %v, want not found", err)
	}
	// An expired token is still returned (the caller compares ExpiresAt) until a later one drops it.
	old := tok("old", now.Add(-time.Minute))
	if err := s.CreateAccessToken(ctx, old); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AccessToken(ctx, old.Hash); err != nil {
		t.Fatalf("expired token before the next issue: %v", err)
	}
	if err := s.CreateAccessToken(ctx, tok("b", now.Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AccessToken(ctx, old.Hash); weft.ErrorCode(err) != weft.ENotFound {
		t.Fatalf("expired token after the next issue: %v, want not found", err)
	}
	if err := s.RevokeAccessToken(ctx, a.Hash); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeAccessToken(ctx, weft.HashAPIKey("nope")); err != nil {
		t.Fatalf("revoking an unknown token: %v", err)
	}
	if _, err := s.AccessToken(ctx, a.Hash); weft.ErrorCode(err) != weft.ENotFound {
		t.Fatalf("revoked token: %v, want not found", err)
	}
	if _, err := s.AccessToken(ctx, weft.HashAPIKey("b")); err != nil {
		t.Fatalf("the other token: %v", err)
	}
	if err := s.RevokeKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AccessToken(ctx, weft.HashAPIKey("b")); weft.ErrorCode(err) != weft.ENotFound {
		t.Fatalf("token of a revoked key: %v, want not found", err)
	}
	if err := s.CreateAccessToken(ctx, tok("c", now.Add(time.Hour))); weft.ErrorCode(err) != weft.ENotFound {
		t.Fatalf("token of a revoked key: %v, want not found", err)
	}
}
