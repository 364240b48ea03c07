// Package envcrypt encrypts env values at rest with AES-256-GCM.
//
// Every value gets a fresh random 96-bit nonce, so two writes of the same plaintext give different
// ciphertexts. A short key id derived from the key is stored beside each value so a store can tell
// which key sealed it (key rotation) and fail loudly when opened with the wrong key.
package envcrypt

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KeySize is the length of an encryption key in bytes (AES-256).
const KeySize = 32

// KeyFile is the name of the key file created in a data directory when no key is configured.
const KeyFile = "weft.key"

// ErrDecrypt is returned by Open when a ciphertext is malformed, was sealed with another key or was
// tampered with.
var ErrDecrypt = errors.New("envcrypt: cannot decrypt value (wrong key or corrupted data)")

// Cipher seals and opens values with one AES-256-GCM key. It is safe for concurrent use.
type Cipher struct {
	aead cipher.AEAD
	id   string
}

// New returns a Cipher for a 32-byte key.
func New(key []byte) (*Cipher, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("envcrypt: key must be %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("envcrypt: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("envcrypt: %w", err)
	}
	return &Cipher{aead: aead, id: keyID(key)}, nil
}

// keyID is the first 6 bytes of a domain-separated SHA-256 of the key, in hex: short, stable and
// revealing nothing useful about the key.
func keyID(key []byte) string {
	h := sha256.New()
	h.Write([]byte("weft env key id\x00"))
	h.Write(key)
	return hex.EncodeToString(h.Sum(nil)[:6])
}

// KeyID returns a short id derived from the key (12 hex digits), stored with each value.
func (c *Cipher) KeyID() string { return c.id }

// Seal encrypts plaintext with a fresh random nonce and returns nonce || ciphertext || tag.
func (c *Cipher) Seal(plaintext []byte) []byte {
	ns := c.aead.NonceSize()
	out := make([]byte, ns, ns+len(plaintext)+c.aead.Overhead())
	rand.Read(out) // never returns an error (crypto/rand crashes the program instead)
	return c.aead.Seal(out, out, plaintext, nil)
}

// Open decrypts a value made by Seal; ErrDecrypt if it was sealed with another key or altered.
func (c *Cipher) Open(ciphertext []byte) ([]byte, error) {
	ns := c.aead.NonceSize()
	if len(ciphertext) < ns+c.aead.Overhead() {
		return nil, ErrDecrypt
	}
	p, err := c.aead.Open(nil, ciphertext[:ns], ciphertext[ns:], nil)
	if err != nil {
		return nil, ErrDecrypt
	}
	return p, nil
}

// NewKey returns a new random 32-byte key (e.g. the throwaway key of an in-memory store).
func NewKey() []byte {
	k := make([]byte, KeySize)
	rand.Read(k)
	return k
}

// EncodeKey renders a key in standard base64, the form ParseKey and the key file use.
func EncodeKey(key []byte) string { return base64.StdEncoding.EncodeToString(key) }

// ParseKey decodes a 32-byte key written in hex (64 digits) or base64 (standard or URL alphabet,
// padded or not), as in WEFT_ENCRYPTION_KEY. Surrounding white space is ignored.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("envcrypt: empty encryption key")
	}
	if len(s) == 2*KeySize {
		if k, err := hex.DecodeString(s); err == nil {
			return k, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil {
			if len(k) != KeySize {
				return nil, fmt.Errorf("envcrypt: encryption key must decode to %d bytes, got %d", KeySize, len(k))
			}
			return k, nil
		}
	}
	return nil, fmt.Errorf("envcrypt: encryption key is neither %d hex digits nor base64 of %d bytes", 2*KeySize, KeySize)
}

// KeyFileFor is the key file of a database file when no key is configured: the database's path
// with ".key" appended (weft.db → weft.db.key), so that every database has a key of its own and a
// database copied or deleted with its key file takes nothing from another.
func KeyFileFor(database string) string { return database + ".key" }

// LoadOrCreateKey reads the key file <dir>/weft.key, or creates it; see LoadOrCreateKeyFile.
// Databases in one directory once shared this file; SQLite databases now have a key file each
// (KeyFileFor) and read this one only when it is the key an existing database was sealed with.
func LoadOrCreateKey(dir string) (key []byte, created bool, err error) {
	return LoadOrCreateKeyFile(filepath.Join(dir, KeyFile))
}

// LoadOrCreateKeyFile reads the key file at path, or creates it (mode 0600, its directory 0700)
// with a new random key when it does not exist; created reports the latter, so the caller can warn
// that the key must be kept with the data.
func LoadOrCreateKeyFile(path string) (key []byte, created bool, err error) {
	key, err = ReadKeyFile(path)
	switch {
	case err == nil:
		return key, false, nil
	case errors.Is(err, errEmptyKeyFile):
		// Only an interrupted creation leaves an empty key file (the key is linked into place whole
		// below): nothing was ever encrypted with it, so it is replaced.
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return nil, false, fmt.Errorf("envcrypt: replace empty key file: %w", rerr)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, false, err
	}
	key = NewKey()
	if err := WriteKeyFile(path, key); err != nil {
		if errors.Is(err, fs.ErrExist) { // another process created it first: use theirs
			key, err = ReadKeyFile(path)
			return key, false, err
		}
		return nil, false, err
	}
	return key, true, nil
}

// WriteKeyFile creates the key file at path holding key (mode 0600, its directory 0700). It never
// replaces a file: when path exists the error wraps fs.ErrExist. The key is written to a temporary
// file, synced, then hard-linked into place, so the key file either does not exist or holds a
// whole key, even if the process is killed half-way.
func WriteKeyFile(path string, key []byte) error {
	if len(key) != KeySize {
		return fmt.Errorf("envcrypt: key must be %d bytes, got %d", KeySize, len(key))
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("envcrypt: create key directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("envcrypt: create key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("envcrypt: create key file: %w", err)
	}
	_, err = tmp.WriteString(EncodeKey(key) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("envcrypt: write key file %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		return fmt.Errorf("envcrypt: create key file %s: %w", path, err)
	}
	return nil
}

// errEmptyKeyFile marks a key file with no content.
var errEmptyKeyFile = errors.New("key file is empty")

// ReadKeyFile reads the key in the key file at path; a missing file is an error wrapping
// fs.ErrNotExist.
func ReadKeyFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("envcrypt: read key file: %w", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("envcrypt: key file %s: %w", path, errEmptyKeyFile)
	}
	k, err := ParseKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("envcrypt: key file %s: %w", path, err)
	}
	return k, nil
}

// WrongKeyError reports that a store was opened with a key other than the one its data was sealed
// with.
type WrongKeyError struct {
	// KeyID is the id of the key given; Expected the id the database was created with.
	KeyID, Expected string
}

// Error names both key ids.
func (e *WrongKeyError) Error() string {
	return fmt.Sprintf("wrong encryption key for this database (key id %s, database expects %s)", e.KeyID, e.Expected)
}

// checkPlaintext is sealed into a store's check value.
const checkPlaintext = "weft encryption key check"

// NewCheck returns a check value to store beside the data: CheckKey verifies a key against it.
func (c *Cipher) NewCheck() []byte { return c.Seal([]byte(checkPlaintext)) }

// CheckKey verifies that check was made by NewCheck with this cipher's key; expectedID is the key id
// stored with it. A mismatch is a *WrongKeyError.
func (c *Cipher) CheckKey(check []byte, expectedID string) error {
	p, err := c.Open(check)
	if err != nil || string(p) != checkPlaintext {
		return &WrongKeyError{KeyID: c.id, Expected: expectedID}
	}
	return nil
}
