package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/storecontract"
)

// Env returns the decrypted values of one scope and owner, sorted by name. A value sealed with
// another key than the store's fails with an error naming both key ids.
func (s *Store) Env(ctx context.Context, scope weft.EnvScope, owner string) ([]weft.EnvValue, error) {
	rows, err := s.query(ctx, `SELECT doc FROM env WHERE scope = ? AND owner = ? ORDER BY name`, string(scope), owner)
	if err != nil {
		return nil, fmt.Errorf("sqlite: env %s %s: %w", scope, owner, err)
	}
	defer rows.Close()
	out := []weft.EnvValue{}
	for rows.Next() {
		var doc string
		if err := rows.Scan(&doc); err != nil {
			return nil, fmt.Errorf("sqlite: env %s %s: %w", scope, owner, err)
		}
		v, err := s.openEnv(scope, owner, doc)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// openEnv decodes and decrypts a stored value. A value sealed with another key than the store's
// fails with an error naming both key ids.
func (s *Store) openEnv(scope weft.EnvScope, owner, doc string) (weft.EnvValue, error) {
	e, err := decodeEnv(doc)
	if err != nil {
		return weft.EnvValue{}, fmt.Errorf("sqlite: env %s %s: variable %s: %w", scope, owner, e.name, err)
	}
	if e.keyID != s.cipher.KeyID() {
		return weft.EnvValue{}, fmt.Errorf("env %s %s: variable %s was encrypted with key %s, current key is %s", scope, owner, e.name, e.keyID, s.cipher.KeyID())
	}
	p, err := s.cipher.Open([]byte(e.sealed))
	if err != nil {
		return weft.EnvValue{}, fmt.Errorf("env %s %s: variable %s: %w", scope, owner, e.name, err)
	}
	return weft.EnvValue{Name: e.name, Value: string(p), Type: e.typ, UpdatedAt: e.updated}, nil
}

// SetEnv stores (encrypted) or, with Delete, removes env values of one scope and owner, atomically.
// An empty Type is stored as secret.
func (s *Store) SetEnv(ctx context.Context, scope weft.EnvScope, owner string, values []weft.EnvValue) error {
	for _, v := range values {
		if _, err := storecontract.CheckEnvValue(scope, owner, v); err != nil {
			return err
		}
	}
	return s.write(ctx, func(w *writer) error { return s.setEnv(ctx, w, scope, owner, values, s.now()) })
}

// setEnv writes checked values inside a write transaction.
func (s *Store) setEnv(ctx context.Context, w *writer, scope weft.EnvScope, owner string, values []weft.EnvValue, now time.Time) error {
	for _, v := range values {
		var err error
		if v.Delete {
			_, err = w.exec(ctx, `DELETE FROM env WHERE scope = ? AND owner = ? AND name = ?`, string(scope), owner, v.Name)
		} else {
			typ, _ := storecontract.CheckEnvValue(scope, owner, v)
			_, err = w.exec(ctx, `INSERT INTO env (scope, owner, name, doc) VALUES (?, ?, ?, ?)
				ON CONFLICT (scope, owner, name) DO UPDATE SET doc = excluded.doc`,
				string(scope), owner, v.Name, envDoc(v.Name, s.cipher.Seal([]byte(v.Value)), s.cipher.KeyID(), typ, now))
		}
		if err != nil {
			return fmt.Errorf("sqlite: env %s %s: variable %s: %w", scope, owner, v.Name, err)
		}
	}
	return nil
}
