package storetest

import (
	"context"
	"testing"

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
