package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/storecontract"
)

// Env returns the decrypted values of one scope and owner, sorted by name.
func (s *Store) Env(ctx context.Context, scope weft.EnvScope, owner string) ([]weft.EnvValue, error) {
	rows, err := s.pool.Query(ctx, `SELECT name, value_enc, key_id, type, updated_at FROM env
		WHERE scope = $1 AND owner = $2 ORDER BY name`, string(scope), owner)
	if err != nil {
		return nil, pgErr(fmt.Sprintf("env %s %s", scope, owner), err)
	}
	raw, err := scanEnvRows(rows)
	if err != nil {
		return nil, pgErr(fmt.Sprintf("env %s %s", scope, owner), err)
	}
	return s.openEnv(scope, owner, raw)
}

// envRow is a stored env value, still sealed.
type envRow struct {
	name, keyID, typ string
	enc              []byte
	at               int64
}

// scanEnvRows reads rows of name, value_enc, key_id, type, updated_at.
func scanEnvRows(rows pgx.Rows) ([]envRow, error) {
	defer rows.Close()
	var out []envRow
	for rows.Next() {
		var r envRow
		if err := rows.Scan(&r.name, &r.enc, &r.keyID, &r.typ, &r.at); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// openEnv decrypts sealed values, failing on one sealed with another key.
func (s *Store) openEnv(scope weft.EnvScope, owner string, raw []envRow) ([]weft.EnvValue, error) {
	out := make([]weft.EnvValue, 0, len(raw))
	for _, r := range raw {
		if r.keyID != s.cipher.KeyID() {
			return nil, fmt.Errorf("env %s %s: variable %s was encrypted with key %s, current key is %s", scope, owner, r.name, r.keyID, s.cipher.KeyID())
		}
		p, err := s.cipher.Open(r.enc)
		if err != nil {
			return nil, fmt.Errorf("env %s %s: variable %s: %w", scope, owner, r.name, err)
		}
		out = append(out, weft.EnvValue{Name: r.name, Value: string(p), Type: weft.VarType(r.typ), UpdatedAt: fromNanos(r.at)})
	}
	return out, nil
}

// SetEnv stores (encrypted) or, with Delete, removes env values of one scope and owner, in one
// transaction. An empty Type is stored as secret.
func (s *Store) SetEnv(ctx context.Context, scope weft.EnvScope, owner string, values []weft.EnvValue) error {
	for _, v := range values {
		if _, err := storecontract.CheckEnvValue(scope, owner, v); err != nil {
			return err
		}
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return s.setEnvTx(ctx, tx, scope, owner, values, s.nowUTC())
	})
	return pgErr(fmt.Sprintf("env %s %s", scope, owner), err)
}

// setEnvTx writes checked env values inside tx.
func (s *Store) setEnvTx(ctx context.Context, tx pgConn, scope weft.EnvScope, owner string, values []weft.EnvValue, now time.Time) error {
	if len(values) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, v := range values {
		if v.Delete {
			b.Queue("DELETE FROM env WHERE scope = $1 AND owner = $2 AND name = $3", string(scope), owner, v.Name)
			continue
		}
		typ, _ := storecontract.CheckEnvValue(scope, owner, v)
		b.Queue(`INSERT INTO env (scope, owner, name, value_enc, key_id, type, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (scope, owner, name) DO UPDATE SET value_enc = excluded.value_enc, key_id = excluded.key_id,
			type = excluded.type, updated_at = excluded.updated_at`,
			string(scope), owner, v.Name, s.cipher.Seal([]byte(v.Value)), s.cipher.KeyID(), string(typ), nanos(now))
	}
	return tx.SendBatch(ctx, b).Close()
}
