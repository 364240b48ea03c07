package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/weft-agents/weft"
)

// CreateUser stores a new user; a taken name (or id) is a conflict.
func (s *Store) CreateUser(ctx context.Context, u *weft.User) error {
	if u.Name == "" {
		return weft.Errorf(weft.EInvalid, "a user needs a name")
	}
	if u.ID == "" {
		u.ID = weft.NewID("usr_")
	}
	if u.CreatedAt.IsZero() {
		u.CreatedAt = s.nowUTC()
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO users (id, name, is_admin, created_at) VALUES ($1, $2, $3, $4)`,
		u.ID, text(u.Name), u.IsAdmin, nanos(u.CreatedAt))
	if isCode(err, uniqueViolation) {
		return weft.Errorf(weft.EConflict, "a user named %q exists", u.Name)
	}
	return pgErr("create user", err)
}

// User returns a user by id.
func (s *Store) User(ctx context.Context, id string) (*weft.User, error) {
	return s.oneUser(ctx, `id = $1`, id)
}

// UserByName returns a user by name.
func (s *Store) UserByName(ctx context.Context, name string) (*weft.User, error) {
	return s.oneUser(ctx, `name = $1`, text(name))
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
	rows, err := s.pool.Query(ctx, `SELECT id, name, is_admin, created_at FROM users `+where+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, pgErr("users", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (weft.User, error) {
		var u weft.User
		var at int64
		err := r.Scan(&u.ID, &u.Name, &u.IsAdmin, &at)
		u.CreatedAt = fromNanos(at)
		return u, err
	})
	if out == nil && err == nil {
		out = []weft.User{}
	}
	return out, pgErr("users", err)
}

// CreateKey stores a new key of an existing user (ErrNotFound otherwise).
func (s *Store) CreateKey(ctx context.Context, k *weft.APIKey) error {
	if k.Hash == "" {
		return weft.Errorf(weft.EInvalid, "an API key needs its hash")
	}
	if k.ID == "" {
		k.ID = weft.NewID("key_")
	}
	if k.CreatedAt.IsZero() {
		k.CreatedAt = s.nowUTC()
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO api_keys (id, user_id, hash, hint, created_at) VALUES ($1, $2, $3, $4, $5)`,
		k.ID, k.UserID, k.Hash, text(k.Hint), nanos(k.CreatedAt))
	switch {
	case isCode(err, foreignKeyViolation):
		return weft.ErrNotFound
	case isCode(err, uniqueViolation):
		return weft.Errorf(weft.EConflict, "API key %s exists", k.ID)
	}
	return pgErr("create key", err)
}

// KeyByHash returns the valid key with that hash.
func (s *Store) KeyByHash(ctx context.Context, hash string) (*weft.APIKey, error) {
	ks, err := s.keys(ctx, `WHERE hash = $1 AND revoked_at IS NULL`, text(hash))
	if err != nil {
		return nil, err
	}
	if len(ks) == 0 {
		return nil, weft.ErrNotFound
	}
	return &ks[0], nil
}

// Keys lists the keys of a user (every user's when userID is ""), revoked ones included.
func (s *Store) Keys(ctx context.Context, userID string) ([]weft.APIKey, error) {
	if userID == "" {
		return s.keys(ctx, "")
	}
	return s.keys(ctx, `WHERE user_id = $1`, userID)
}

func (s *Store) keys(ctx context.Context, where string, args ...any) ([]weft.APIKey, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, user_id, hash, hint, created_at, revoked_at FROM api_keys `+where+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, pgErr("api keys", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (weft.APIKey, error) {
		var k weft.APIKey
		var at int64
		var revoked *int64
		err := r.Scan(&k.ID, &k.UserID, &k.Hash, &k.Hint, &at, &revoked)
		k.CreatedAt = fromNanos(at)
		if revoked != nil {
			t := fromNanos(*revoked)
			k.RevokedAt = &t
		}
		return k, err
	})
	if out == nil && err == nil {
		out = []weft.APIKey{}
	}
	return out, pgErr("api keys", err)
}

// RevokeKey revokes a key; revoking one already revoked is no error.
func (s *Store) RevokeKey(ctx context.Context, id string) error {
	ct, err := s.pool.Exec(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, $1) WHERE id = $2`, s.now().UnixNano(), id)
	if err != nil {
		return pgErr("revoke key "+id, err)
	}
	if ct.RowsAffected() == 0 {
		return weft.ErrNotFound
	}
	return nil
}

// CreateAccessToken stores an access token of a valid key and drops the expired ones.
func (s *Store) CreateAccessToken(ctx context.Context, t *weft.AccessToken) error {
	if t.Hash == "" {
		return weft.Errorf(weft.EInvalid, "an access token needs its hash")
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = s.nowUTC()
	}
	var user string
	err := s.pool.QueryRow(ctx, `SELECT user_id FROM api_keys WHERE id = $1 AND revoked_at IS NULL`, text(t.KeyID)).Scan(&user)
	if errors.Is(err, pgx.ErrNoRows) {
		return weft.ErrNotFound
	}
	if err != nil {
		return pgErr("create access token", err)
	}
	if user != t.UserID {
		return weft.Errorf(weft.EInvalid, "key %s is not a key of user %s", t.KeyID, t.UserID)
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM access_tokens WHERE expires_at < $1`, nanos(t.CreatedAt)); err != nil {
		return pgErr("create access token", err)
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO access_tokens (hash, user_id, key_id, client, resource, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		text(t.Hash), t.UserID, t.KeyID, text(t.Client), text(t.Resource), nanos(t.CreatedAt), nanos(t.ExpiresAt))
	if isCode(err, foreignKeyViolation) {
		return weft.ErrNotFound // the key went between the two statements
	}
	return pgErr("create access token", err)
}

// AccessToken returns the token with that hash while it and its key are not revoked.
func (s *Store) AccessToken(ctx context.Context, hash string) (*weft.AccessToken, error) {
	var t weft.AccessToken
	var created, expires int64
	err := s.pool.QueryRow(ctx, `SELECT t.hash, t.user_id, t.key_id, t.client, t.resource, t.created_at, t.expires_at
		FROM access_tokens t JOIN api_keys k ON k.id = t.key_id
		WHERE t.hash = $1 AND t.revoked_at IS NULL AND k.revoked_at IS NULL`, text(hash)).
		Scan(&t.Hash, &t.UserID, &t.KeyID, &t.Client, &t.Resource, &created, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, weft.ErrNotFound
	}
	if err != nil {
		return nil, pgErr("access token", err)
	}
	t.CreatedAt, t.ExpiresAt = fromNanos(created), fromNanos(expires)
	return &t, nil
}

// RevokeAccessToken revokes the token with that hash.
func (s *Store) RevokeAccessToken(ctx context.Context, hash string) error {
	_, err := s.pool.Exec(ctx, `UPDATE access_tokens SET revoked_at = coalesce(revoked_at, $1) WHERE hash = $2`, s.now().UnixNano(), text(hash))
	return pgErr("revoke access token", err)
}
