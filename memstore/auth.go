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
	mu    sync.RWMutex
	users []weft.User
	keys  []weft.APIKey
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
