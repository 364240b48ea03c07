package memstore

import (
	"context"
	"slices"
	"sync"

	"github.com/weft-agents/weft"
)

var _ weft.AuthStore = (*Store)(nil)

// authData holds the users and API keys (weft.AuthStore).
type authData struct {
	mu     sync.RWMutex
	users  []weft.User
	keys   []weft.APIKey
	tokens []accessToken
}

// accessToken is a stored weft.AccessToken with its revocation.
type accessToken struct {
	weft.AccessToken
	revoked bool
}

// CreateUser stores a new user; a taken name is a conflict.
func (s *Store) CreateUser(ctx context.Context, u *weft.User) error {
	if u.Name == "" {
		return weft.Errorf(weft.EInvalid, "a user needs a name")
	}
	a := &s.auth
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, o := range a.users {
		if o.Name == u.Name {
			return weft.Errorf(weft.EConflict, "a user named %q exists", u.Name)
		}
		if u.ID != "" && o.ID == u.ID {
			return weft.Errorf(weft.EConflict, "a user with id %q exists", u.ID)
		}
	}
	if u.ID == "" {
		u.ID = weft.NewID("usr_")
	}
	if u.CreatedAt.IsZero() {
		u.CreatedAt = s.nowUTC()
	}
	a.users = append(a.users, *u)
	return nil
}

// User returns a user by id.
func (s *Store) User(ctx context.Context, id string) (*weft.User, error) {
	return s.findUser(func(u *weft.User) bool { return u.ID == id })
}

// UserByName returns a user by name.
func (s *Store) UserByName(ctx context.Context, name string) (*weft.User, error) {
	return s.findUser(func(u *weft.User) bool { return u.Name == name })
}

func (s *Store) findUser(match func(*weft.User) bool) (*weft.User, error) {
	a := &s.auth
	a.mu.RLock()
	defer a.mu.RUnlock()
	for i := range a.users {
		if match(&a.users[i]) {
			u := a.users[i]
			return &u, nil
		}
	}
	return nil, weft.ErrNotFound
}

// Users lists every user by creation order.
func (s *Store) Users(ctx context.Context) ([]weft.User, error) {
	a := &s.auth
	a.mu.RLock()
	defer a.mu.RUnlock()
	return slices.Clone(a.users), nil
}

// CreateKey stores a new key of an existing user.
func (s *Store) CreateKey(ctx context.Context, k *weft.APIKey) error {
	if k.Hash == "" {
		return weft.Errorf(weft.EInvalid, "an API key needs its hash")
	}
	a := &s.auth
	a.mu.Lock()
	defer a.mu.Unlock()
	if !slices.ContainsFunc(a.users, func(u weft.User) bool { return u.ID == k.UserID }) {
		return weft.ErrNotFound
	}
	if k.ID == "" {
		k.ID = weft.NewID("key_")
	}
	if k.CreatedAt.IsZero() {
		k.CreatedAt = s.nowUTC()
	}
	a.keys = append(a.keys, *k)
	return nil
}

// KeyByHash returns the valid key with that hash.
func (s *Store) KeyByHash(ctx context.Context, hash string) (*weft.APIKey, error) {
	a := &s.auth
	a.mu.RLock()
	defer a.mu.RUnlock()
	for _, k := range a.keys {
		if k.RevokedAt == nil && weft.SameSecret(k.Hash, hash) {
			return &k, nil
		}
	}
	return nil, weft.ErrNotFound
}

// Keys lists the keys of a user (every user's when userID is "").
func (s *Store) Keys(ctx context.Context, userID string) ([]weft.APIKey, error) {
	a := &s.auth
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := []weft.APIKey{}
	for _, k := range a.keys {
		if userID == "" || k.UserID == userID {
			out = append(out, k)
		}
	}
	return out, nil
}

// RevokeKey revokes a key.
func (s *Store) RevokeKey(ctx context.Context, id string) error {
	a := &s.auth
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := range a.keys {
		if a.keys[i].ID == id {
			if a.keys[i].RevokedAt == nil {
				now := s.nowUTC()
				a.keys[i].RevokedAt = &now
			}
			return nil
		}
	}
	return weft.ErrNotFound
}

// CreateAccessToken stores an access token of a valid key and drops the expired ones.
func (s *Store) CreateAccessToken(ctx context.Context, t *weft.AccessToken) error {
	if t.Hash == "" {
		return weft.Errorf(weft.EInvalid, "an access token needs its hash")
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = s.nowUTC()
	}
	a := &s.auth
	a.mu.Lock()
	defer a.mu.Unlock()
	i := slices.IndexFunc(a.keys, func(k weft.APIKey) bool { return k.ID == t.KeyID && k.RevokedAt == nil })
	if i < 0 {
		return weft.ErrNotFound
	}
	if a.keys[i].UserID != t.UserID {
		return weft.Errorf(weft.EInvalid, "key %s is not a key of user %s", t.KeyID, t.UserID)
	}
	a.tokens = slices.DeleteFunc(a.tokens, func(x accessToken) bool { return x.ExpiresAt.Before(t.CreatedAt) })
	a.tokens = append(a.tokens, accessToken{AccessToken: *t})
	return nil
}

// AccessToken returns the token with that hash while it and its key are not revoked.
func (s *Store) AccessToken(ctx context.Context, hash string) (*weft.AccessToken, error) {
	a := &s.auth
	a.mu.RLock()
	defer a.mu.RUnlock()
	for _, t := range a.tokens {
		if t.revoked || !weft.SameSecret(t.Hash, hash) {
			continue
		}
		if !slices.ContainsFunc(a.keys, func(k weft.APIKey) bool { return k.ID == t.KeyID && k.RevokedAt == nil }) {
			return nil, weft.ErrNotFound
		}
		out := t.AccessToken
		return &out, nil
	}
	return nil, weft.ErrNotFound
}

// RevokeAccessToken revokes the token with that hash.
func (s *Store) RevokeAccessToken(ctx context.Context, hash string) error {
	a := &s.auth
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := range a.tokens {
		if weft.SameSecret(a.tokens[i].Hash, hash) {
			a.tokens[i].revoked = true
		}
	}
	return nil
}
