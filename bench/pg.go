package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgSchema creates a schema with a fresh name on the database base names and returns a URL whose
// connections use it, and a function that drops it with everything in it.
func pgSchema(ctx context.Context, base string) (name, dsn string, drop func() error, err error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name = "weft_bench_" + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", "", nil, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		return "", "", nil, err
	}
	drop = func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		_, err = c.Exec(ctx, "DROP SCHEMA "+name+" CASCADE")
		return err
	}
	u, err := url.Parse(base)
	if err != nil {
		drop()
		return "", "", nil, err
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return name, u.String(), drop, nil
}
