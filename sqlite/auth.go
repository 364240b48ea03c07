package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/weft-agents/weft"
)

var _ weft.AuthStore = (*Store)(nil)

// CreateUser stores a new user; a taken name is a conflict.
func (s *Store) CreateUser(ctx context.Context, u *weft.User) error {
	if u.Name == "" {
		return weft.Errorf(weft.EInvalid, "a user needs a name")
	}
	if u.ID == "" {
		u.ID = weft.NewID("usr_")
	}
	if u.CreatedAt.IsZero() {
		u.CreatedAt = s.now().UTC()
	}
	err := s.write(ctx, func(w *writer) error {
		_, err := w.exec(ctx, `INSERT INTO users (id, name, is_admin, created_at) VALUES (?, ?, ?, ?)`,
			u.ID, u.Name, u.IsAdmin, u.CreatedAt.UnixNano())
		return err
	})
	if err != nil && strings.Contains(err.Error(), "UNIQUE") {
		return weft.Errorf(weft.EConflict, "a user named %q exists", u.Name)
	}
	if err != nil {
		return fmt.Errorf("sqlite: create user %q: %w", u.Name, err)
	}
	return nil
}

// User returns a user by id.
func (s *Store) User(ctx context.Context, id string) (*weft.User, error) {
	return s.oneUser(ctx, `id = ?`, id)
}

// UserByName returns a user by name.
func (s *Store) UserByName(ctx context.Context, name string) (*weft.User, error) {
	return s.oneUser(ctx, `name = ?`, name)
}

func (s *Store) oneUser(ctx context.Context, where string, arg string) (*weft.User, error) {
	us, err := s.users(ctx, `WHERE `+where, arg)
	if err != nil {
		return nil, err
	}
	if len(us) == 0 {
		return nil, weft.ErrNotFound
	}
	return &us[0], nil
}

// Users lists every user by creation order.
func (s *Store) Users(ctx context.Context) ([]weft.User, error) { return s.users(ctx, "") }

func (s *Store) users(ctx context.Context, where string, args ...any) ([]weft.User, error) {
	rows, err := s.query(ctx, `SELECT id, name, is_admin, created_at FROM users `+where+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: users: %w", err)
	}
	defer rows.Close()
	out := []weft.User{}
	for rows.Next() {
		var u weft.User
		var at int64
		if err := rows.Scan(&u.ID, &u.Name, &u.IsAdmin, &at); err != nil {
			return nil, fmt.Errorf("sqlite: users: %w", err)
		}
		u.CreatedAt = time.Unix(0, at).UTC()
		out = append(out, u)
	}
	return out, rows.Err()
}

// CreateKey stores a new key of an existing user.
func (s *Store) CreateKey(ctx context.Context, k *weft.APIKey) error {
	if k.Hash == "" {
		return weft.Errorf(weft.EInvalid, "an API key needs its hash")
	}
	if k.ID == "" {
		k.ID = weft.NewID("key_")
	}
	if k.CreatedAt.IsZero() {
		k.CreatedAt = s.now().UTC()
	}
	return s.write(ctx, func(w *writer) error {
		var one int
		err := w.row(ctx, `SELECT 1 FROM users WHERE id = ?`, []any{&one}, k.UserID)
		if errors.Is(err, sql.ErrNoRows) {
			return weft.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("sqlite: create key: %w", err)
		}
		if _, err := w.exec(ctx, `INSERT INTO api_keys (id, user_id, hash, hint, created_at) VALUES (?, ?, ?, ?, ?)`,
			k.ID, k.UserID, k.Hash, k.Hint, k.CreatedAt.UnixNano()); err != nil {
			return fmt.Errorf("sqlite: create key: %w", err)
		}
		return nil
	})
}

// KeyByHash returns the valid key with that hash.
func (s *Store) KeyByHash(ctx context.Context, hash string) (*weft.APIKey, error) {
	ks, err := s.keys(ctx, `WHERE hash = ? AND revoked_at IS NULL`, hash)
	if err != nil {
		return nil, err
	}
	if len(ks) == 0 {
		return nil, weft.ErrNotFound
	}
	return &ks[0], nil
}

// Keys lists the keys of a user (every user's when userID is "").
func (s *Store) Keys(ctx context.Context, userID string) ([]weft.APIKey, error) {
	if userID == "" {
		return s.keys(ctx, "")
	}
	return s.keys(ctx, `WHERE user_id = ?`, userID)
}

func (s *Store) keys(ctx context.Context, where string, args ...any) ([]weft.APIKey, error) {
	rows, err := s.query(ctx, `SELECT id, user_id, hash, hint, created_at, revoked_at FROM api_keys `+where+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: api keys: %w", err)
	}
	defer rows.Close()
	out := []weft.APIKey{}
	for rows.Next() {
		var k weft.APIKey
		var at int64
		var revoked sql.NullInt64
		if err := rows.Scan(&k.ID, &k.UserID, &k.Hash, &k.Hint, &at, &revoked); err != nil {
			return nil, fmt.Errorf("sqlite: api keys: %w", err)
		}
		k.CreatedAt = time.Unix(0, at).UTC()
		if revoked.Valid {
			t := time.Unix(0, revoked.Int64).UTC()
			k.RevokedAt = &t
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// RevokeKey revokes a key.
func (s *Store) RevokeKey(ctx context.Context, id string) error {
	return s.write(ctx, func(w *writer) error {
		res, err := w.exec(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?`, s.now().UnixNano(), id)
		if err != nil {
			return fmt.Errorf("sqlite: revoke key %s: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return weft.ErrNotFound
		}
		return nil
	})
}

// CreateAccessToken stores an access token of a valid key and drops the expired ones.
func (s *Store) CreateAccessToken(ctx context.Context, t *weft.AccessToken) error {
	if t.Hash == "" {
		return weft.Errorf(weft.EInvalid, "an access token needs its hash")
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = s.now().UTC()
	}
	return s.write(ctx, func(w *writer) error {
		var user string
		err := w.row(ctx, `SELECT user_id FROM api_keys WHERE id = ? AND revoked_at IS NULL`, []any{&user}, t.KeyID)
		if errors.Is(err, sql.ErrNoRows) {
			return weft.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("sqlite: create access token: %w", err)
		}
		if user != t.UserID {
			return weft.Errorf(weft.EInvalid, "key %s is not a key of user %s", t.KeyID, t.UserID)
		}
		if _, err := w.exec(ctx, `DELETE FROM access_tokens WHERE expires_at < ?`, nanos(t.CreatedAt)); err != nil {
			return fmt.Errorf("sqlite: create access token: %w", err)
		}
		if _, err := w.exec(ctx, `INSERT INTO access_tokens (hash, user_id, key_id, client, resource, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			t.Hash, t.UserID, t.KeyID, t.Client, t.Resource, nanos(t.CreatedAt), nanos(t.ExpiresAt)); err != nil {
			return fmt.Errorf("sqlite: create access token: %w", err)
		}
		return nil
	})
}

// AccessToken returns the token with that hash while it and its key are not revoked.
func (s *Store) AccessToken(ctx context.Context, hash string) (*weft.AccessToken, error) {
	var t weft.AccessToken
	var created, expires int64
	err := s.row(ctx, `SELECT t.hash, t.user_id, t.key_id, t.client, t.resource, t.created_at, t.expires_at
		FROM access_tokens t JOIN api_keys k ON k.id = t.key_id
		WHERE t.hash = ? AND t.revoked_at IS NULL AND k.revoked_at IS NULL`,
		[]any{&t.Hash, &t.UserID, &t.KeyID, &t.Client, &t.Resource, &created, &expires}, hash)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, weft.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: access token: %w", err)
	}
	t.CreatedAt, t.ExpiresAt = fromNanos(created), fromNanos(expires)
	return &t, nil
}

// RevokeAccessToken revokes the token with that hash.
func (s *Store) RevokeAccessToken(ctx context.Context, hash string) error {
	return s.write(ctx, func(w *writer) error {
		if _, err := w.exec(ctx, `UPDATE access_tokens SET revoked_at = coalesce(revoked_at, ?) WHERE hash = ?`, s.now().UnixNano(), hash); err != nil {
			return fmt.Errorf("sqlite: revoke access token: %w", err)
		}
		return nil
	})
}
