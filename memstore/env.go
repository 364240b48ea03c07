package memstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/storecontract"
)

type envOwner struct {
	scope weft.EnvScope
	owner string
}

type envRow struct {
	enc     []byte
	keyID   string
	typ     weft.VarType
	updated time.Time
}

// Env returns the decrypted values of one scope and owner, sorted by name.
func (s *Store) Env(ctx context.Context, scope weft.EnvScope, owner string) ([]weft.EnvValue, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	s.envMu.RLock()
	defer s.envMu.RUnlock()
	return s.envLocked(scope, owner)
}

// envLocked decrypts the values of one scope and owner, sorted by name; caller holds envMu.
func (s *Store) envLocked(scope weft.EnvScope, owner string) ([]weft.EnvValue, error) {
	rows := s.env[envOwner{scope, owner}]
	out := make([]weft.EnvValue, 0, len(rows))
	for name, r := range rows {
		if r.keyID != s.cipher.KeyID() {
			return nil, fmt.Errorf("env %s %s: variable %s was encrypted with key %s, current key is %s", scope, owner, name, r.keyID, s.cipher.KeyID())
		}
		p, err := s.cipher.Open(r.enc)
		if err != nil {
			return nil, fmt.Errorf("env %s %s: variable %s: %w", scope, owner, name, err)
		}
		out = append(out, weft.EnvValue{Name: name, Value: string(p), Type: r.typ, UpdatedAt: r.updated})
	}
	slices.SortFunc(out, func(a, b weft.EnvValue) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// SetEnv stores (encrypted) or, with Delete, removes env values of one scope and owner. An empty Type
// is stored as secret.
func (s *Store) SetEnv(ctx context.Context, scope weft.EnvScope, owner string, values []weft.EnvValue) error {
	if s.closed.Load() {
		return errClosed
	}
	for _, v := range values {
		if _, err := storecontract.CheckEnvValue(scope, owner, v); err != nil {
			return err
		}
	}
	s.envMu.Lock()
	defer s.envMu.Unlock()
	s.setEnvLocked(scope, owner, values, s.nowUTC())
	return nil
}

// setEnvLocked applies checked values; caller holds envMu.
func (s *Store) setEnvLocked(scope weft.EnvScope, owner string, values []weft.EnvValue, now time.Time) {
	key := envOwner{scope, owner}
	rows := s.env[key]
	for _, v := range values {
		if v.Delete {
			delete(rows, v.Name)
			continue
		}
		if rows == nil {
			rows = map[string]envRow{}
			s.env[key] = rows
		}
		typ, _ := storecontract.CheckEnvValue(scope, owner, v)
		rows[v.Name] = envRow{enc: s.cipher.Seal([]byte(v.Value)), keyID: s.cipher.KeyID(), typ: typ, updated: now}
	}
	if len(rows) == 0 {
		delete(s.env, key)
	}
}

// rawEnv returns the stored ciphertext of one value (tests).
func (s *Store) rawEnv(scope weft.EnvScope, owner, name string) []byte {
	s.envMu.RLock()
	defer s.envMu.RUnlock()
	return s.env[envOwner{scope, owner}][name].enc
}
