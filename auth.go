package weft

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/hex"
	"strings"
	"time"
)

// User is someone who calls the HTTP API. Admins see and manage everything; other users see only
// their own threads and those threads' descendants.
type User struct {
	// ID identifies the user (usr_…); threads carry it as their UserID.
	ID string `json:"id"`
	// Name is unique among users.
	Name string `json:"name"`
	// IsAdmin grants every right.
	IsAdmin bool `json:"is_admin"`
	// CreatedAt is when the user was created.
	CreatedAt time.Time `json:"created_at"`
}

// APIKey is a stored API key. Only the SHA-256 of the key is kept: the key itself is shown once,
// when it is created, and cannot be read back.
type APIKey struct {
	// ID identifies the key (key_…) for listing and revoking; it is not a secret.
	ID string `json:"id"`
	// UserID is the user the key acts as.
	UserID string `json:"user_id"`
	// Hash is the hex SHA-256 of the key; never shown.
	Hash string `json:"-"`
	// Hint is the key's first characters, to tell keys apart in listings.
	Hint string `json:"hint"`
	// CreatedAt is when the key was created.
	CreatedAt time.Time `json:"created_at"`
	// RevokedAt is when the key was revoked; nil while it is valid.
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// AuthStore keeps the users and API keys of a server. Implementations (sqlite, memstore) must
// behave identically; storetest.RunAuth checks them. Safe for concurrent use.
type AuthStore interface {
	// CreateUser stores a new user, filling ID and CreatedAt when empty; a taken name is EConflict.
	CreateUser(ctx context.Context, u *User) error
	// User returns a user by id, or ErrNotFound.
	User(ctx context.Context, id string) (*User, error)
	// UserByName returns a user by name, or ErrNotFound.
	UserByName(ctx context.Context, name string) (*User, error)
	// Users lists every user by creation order.
	Users(ctx context.Context) ([]User, error)
	// CreateKey stores a new key (its hash), filling ID and CreatedAt when empty. The user must
	// exist (ErrNotFound otherwise).
	CreateKey(ctx context.Context, k *APIKey) error
	// KeyByHash returns the valid (not revoked) key with that hash, or ErrNotFound.
	KeyByHash(ctx context.Context, hash string) (*APIKey, error)
	// Keys lists the keys of one user (every user's when userID is ""), revoked ones included, by
	// creation order.
	Keys(ctx context.Context, userID string) ([]APIKey, error)
	// RevokeKey revokes a key; revoking one already revoked is no error; an unknown id is
	// ErrNotFound.
	RevokeKey(ctx context.Context, id string) error
	// CreateAccessToken stores an OAuth access token (its hash), filling CreatedAt when zero, and
	// drops the tokens expired before its CreatedAt. Its key must be valid (ErrNotFound otherwise).
	CreateAccessToken(ctx context.Context, t *AccessToken) error
	// AccessToken returns the token with that hash while it and its key are not revoked (expired
	// or not: the caller compares ExpiresAt), or ErrNotFound.
	AccessToken(ctx context.Context, hash string) (*AccessToken, error)
	// RevokeAccessToken revokes the token with that hash; an unknown or revoked one is no error.
	RevokeAccessToken(ctx context.Context, hash string) error
}

// AccessToken is an OAuth access token the server issued for its MCP endpoint to a client the
// user approved while signed in with one of their API keys. Only the SHA-256 of the token is kept;
// revoking that key ends the token.
type AccessToken struct {
	// Hash is the hex SHA-256 of the token (HashAPIKey).
	Hash string `json:"-"`
	// UserID is the user the token acts as: the key's user.
	UserID string `json:"user_id"`
	// KeyID is the API key the user signed in with to approve the client.
	KeyID string `json:"key_id"`
	// Client names the client it was issued to (its registered client_name, else its client_id).
	Client string `json:"client"`
	// Resource is the resource (RFC 8707) the token is for: the MCP endpoint's URL.
	Resource string `json:"resource"`
	// CreatedAt is when the token was issued.
	CreatedAt time.Time `json:"created_at"`
	// ExpiresAt is when the token stops being accepted.
	ExpiresAt time.Time `json:"expires_at"`
}

// APIKeyPrefix starts every API key.
const APIKeyPrefix = "wft_"

var keyEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewAPIKey returns a new random API key (APIKeyPrefix followed by 32 bytes from crypto/rand in
// base32) and its stored form.
func NewAPIKey(userID string) (key string, rec *APIKey) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	key = APIKeyPrefix + strings.ToLower(keyEncoding.EncodeToString(b[:]))
	return key, &APIKey{ID: NewID("key_"), UserID: userID, Hash: HashAPIKey(key), Hint: key[:len(APIKeyPrefix)+4]}
}

// HashAPIKey returns the hex SHA-256 of a key: the form stores keep and look keys up by.
func HashAPIKey(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

// SameSecret compares two secrets in constant time.
func SameSecret(a, b string) bool {
	return len(a) == len(b) && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
