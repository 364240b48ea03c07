// Package storecontract holds the rules every weft.Store implementation applies identically —
// argument checks and defaults of threads, messages, the queue and tool calls (records.go); KV,
// run-state and env value checks and how searches fold case (storecontract.go); thread-filesystem
// paths and globs (files.go); grep (grep.go); effects (effects.go); how a log's request body is
// stored on an earlier one (bodies.go) — so that memstore, sqlite and
// postgres cannot drift apart. What only the SQL stores share is in internal/sqlstore.
package storecontract

import (
	"encoding/json"

	"github.com/tidwall/gjson"

	"github.com/weft-agents/weft"
)

// Limits of the KV store: a key's length in bytes and a value's size as JSON.
const (
	maxKVKey   = 256
	maxKVValue = 1 << 20
)

// CheckKV validates a KV key and, when non-nil, its JSON value.
func CheckKV(threadID, key string, value json.RawMessage) error {
	if key == "" || len(key) > maxKVKey {
		return weft.Errorf(weft.EInvalid, "thread %s: kv key must be 1 to %d bytes", threadID, maxKVKey)
	}
	if value != nil {
		if len(value) > maxKVValue {
			return weft.Errorf(weft.EInvalid, "thread %s: kv value %q exceeds %d bytes", threadID, key, maxKVValue)
		}
		if !ValidJSON(value) {
			return weft.Errorf(weft.EInvalid, "thread %s: kv value %q is not valid JSON", threadID, key)
		}
	}
	return nil
}

// CheckExecState validates a run-state key and, when non-nil, its JSON value.
func CheckExecState(threadID, key string, value json.RawMessage) error {
	if key == "" {
		return weft.Errorf(weft.EInvalid, "thread %s: empty exec-state key", threadID)
	}
	if value != nil && !ValidJSON(value) {
		return weft.Errorf(weft.EInvalid, "thread %s: exec state %q is not valid JSON", threadID, key)
	}
	return nil
}

// ValidJSON reports whether b is one JSON value, exactly as encoding/json.Valid does, in less than
// half its time: a run writes its run state at every step, and checking it was 5 % of an in-memory
// tool turn. gjson's check agrees with encoding/json's (FuzzValidJSON) except on nesting, which
// gjson does not bound and encoding/json refuses beyond maxJSONDepth levels; a value that short
// cannot nest that deep, and a longer one goes to encoding/json.
func ValidJSON(b []byte) bool {
	if len(b) <= maxJSONDepth {
		return gjson.ValidBytes(b)
	}
	return json.Valid(b)
}

// maxJSONDepth is encoding/json's limit of nesting (its scanner's maxNestingDepth).
const maxJSONDepth = 10000

// CheckEnvValue validates one env value and returns its type; a value without a type is a secret,
// the safe default.
func CheckEnvValue(scope weft.EnvScope, owner string, v weft.EnvValue) (weft.VarType, error) {
	switch scope {
	case weft.EnvThread, weft.EnvUser, weft.EnvInstance:
	default:
		return "", weft.Errorf(weft.EInvalid, "unknown env scope %q", scope)
	}
	if v.Name == "" {
		return "", weft.Errorf(weft.EInvalid, "env %s %s: empty variable name", scope, owner)
	}
	switch v.Type {
	case "":
		return weft.VarSecret, nil
	case weft.VarText, weft.VarSecret:
		return v.Type, nil
	}
	return "", weft.Errorf(weft.EInvalid, "env %s %s: variable %s: unknown type %q", scope, owner, v.Name, v.Type)
}

// ASCIILower lowers ASCII letters only, as SQLite's lower() does, so searches match alike.
func ASCIILower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
