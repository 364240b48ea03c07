package envcrypt

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
	t.Parallel()
	c, err := New(NewKey())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"", "x", "sk-secret-value", strings.Repeat("long ", 1000)} {
		a, b := c.Seal([]byte(p)), c.Seal([]byte(p))
		if bytes.Equal(a, b) {
			t.Errorf("two seals of %q are equal", p)
		}
		if len(p) >= 4 && bytes.Contains(a, []byte(p)) {
			t.Errorf("ciphertext contains plaintext %q", p)
		}
		got, err := c.Open(a)
		if err != nil || string(got) != p {
			t.Errorf("Open = %q, %v; want %q", got, err, p)
		}
	}
	other, _ := New(NewKey())
	if _, err := other.Open(c.Seal([]byte("x"))); !errors.Is(err, ErrDecrypt) {
		t.Errorf("Open with other key: %v, want ErrDecrypt", err)
	}
	if _, err := c.Open([]byte("short")); !errors.Is(err, ErrDecrypt) {
		t.Errorf("Open short: %v", err)
	}
	if other.KeyID() == c.KeyID() || len(c.KeyID()) != 12 {
		t.Errorf("key ids %q %q", c.KeyID(), other.KeyID())
	}
	if _, err := New(make([]byte, 16)); err == nil {
		t.Error("New accepted a 16-byte key")
	}
}

func TestCheckKey(t *testing.T) {
	t.Parallel()
	a, _ := New(NewKey())
	b, _ := New(NewKey())
	check := a.NewCheck()
	if err := a.CheckKey(check, a.KeyID()); err != nil {
		t.Fatal(err)
	}
	err := b.CheckKey(check, a.KeyID())
	want := "wrong encryption key for this database (key id " + b.KeyID() + ", database expects " + a.KeyID() + ")"
	if err == nil || err.Error() != want {
		t.Fatalf("CheckKey = %v, want %s", err, want)
	}
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	k := NewKey()
	for _, s := range []string{
		hex.EncodeToString(k), strings.ToUpper(hex.EncodeToString(k)), base64.StdEncoding.EncodeToString(k),
		base64.RawURLEncoding.EncodeToString(k), "  " + base64.StdEncoding.EncodeToString(k) + "\n",
	} {
		got, err := ParseKey(s)
		if err != nil || !bytes.Equal(got, k) {
			t.Errorf("ParseKey(%q) = %x, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "abc", base64.StdEncoding.EncodeToString(k[:16]), strings.Repeat("z", 64)} {
		if _, err := ParseKey(s); err == nil {
			t.Errorf("ParseKey(%q) accepted", s)
		}
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	k1, created, err := LoadOrCreateKey(dir)
	if err != nil || !created || len(k1) != KeySize {
		t.Fatalf("first: %x %v %v", k1, created, err)
	}
	fi, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode: %v %v", fi, err)
	}
	k2, created, err := LoadOrCreateKey(dir)
	if err != nil || created || !bytes.Equal(k1, k2) {
		t.Fatalf("second: %x %v %v", k2, created, err)
	}
	if err := os.WriteFile(filepath.Join(dir, KeyFile), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateKey(dir); err == nil || !strings.Contains(err.Error(), KeyFile) {
		t.Fatalf("garbage key file: %v", err)
	}
}

// TestLoadOrCreateKeyEmptyFile: a process killed while creating the key file must not leave the
// database unusable — an empty key file (no value was ever sealed with it) is replaced.
func TestLoadOrCreateKeyEmptyFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, KeyFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	key, created, err := LoadOrCreateKey(dir)
	if err != nil || !created || len(key) != KeySize {
		t.Fatalf("key %d bytes, created %v, err %v", len(key), created, err)
	}
	again, created, err := LoadOrCreateKey(dir)
	if err != nil || created || string(again) != string(key) {
		t.Fatalf("reload: created %v err %v", created, err)
	}
	info, _ := os.Stat(filepath.Join(dir, KeyFile))
	if info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", info.Mode().Perm())
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".weft.key-*")); len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

// TestKeyFilePerDatabase: a database's key file is named after it; WriteKeyFile creates a key
// file whole (0600) and never replaces one, so a key that sealed data cannot be overwritten.
func TestKeyFilePerDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if got := KeyFileFor(filepath.Join(dir, "chat.db")); got != filepath.Join(dir, "chat.db.key") {
		t.Fatalf("KeyFileFor = %s", got)
	}
	a, b := KeyFileFor(filepath.Join(dir, "a.db")), KeyFileFor(filepath.Join(dir, "b.db"))
	ka, created, err := LoadOrCreateKeyFile(a)
	if err != nil || !created {
		t.Fatal(created, err)
	}
	kb, _, err := LoadOrCreateKeyFile(b)
	if err != nil || bytes.Equal(ka, kb) {
		t.Fatalf("two databases, one key: %v", err)
	}
	if err := WriteKeyFile(a, NewKey()); !errors.Is(err, os.ErrExist) {
		t.Fatalf("WriteKeyFile over an existing key: %v", err)
	}
	if k, err := ReadKeyFile(a); err != nil || !bytes.Equal(k, ka) {
		t.Fatalf("the key changed: %v", err)
	}
	c := filepath.Join(dir, "sub", "c.db.key")
	kc := NewKey()
	if err := WriteKeyFile(c, kc); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(c); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode: %v %v", fi, err)
	}
	if k, err := ReadKeyFile(c); err != nil || !bytes.Equal(k, kc) {
		t.Fatalf("read back: %v", err)
	}
	if _, err := ReadKeyFile(filepath.Join(dir, "none.key")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing key file: %v", err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, "*", ".*-*")); len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}
