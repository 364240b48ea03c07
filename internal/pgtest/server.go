package pgtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a PostgreSQL server of a test's own, for the tests that stop and restart the database
// under a running Weft: the shared server WEFT_TEST_POSTGRES_URL names serves other tests at the
// same time and must not be restarted.
type Server struct {
	t    testing.TB
	bin  string
	data string
	log  string
	port int
	cred *syscall.Credential
	// DSN is the URL of the server's postgres database.
	DSN string
}

// StartServer initdbs a cluster in a temporary directory and starts it on a free loopback port,
// stopped when the test ends. Like Schema, it runs only when WEFT_TEST_POSTGRES_URL is set (a
// machine set up for the PostgreSQL tests); the server's programs are found with pg_config, or
// under /usr/lib/postgresql, or in WEFT_TEST_PG_BIN. Run as root, the server runs as the user
// postgres, as initdb requires.
func StartServer(t testing.TB) *Server {
	t.Helper()
	BaseURL(t)
	bin, err := binDir()
	if err != nil {
		t.Fatalf("%s is set, so the PostgreSQL tests run, but %v", Env, err)
	}
	s := &Server{t: t, bin: bin}
	root, err := os.MkdirTemp("", "weft-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	s.data, s.log = filepath.Join(root, "data"), filepath.Join(root, "server.log")
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, the test server runs as the user postgres: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(root, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	s.port = freePort(t)
	s.run("initdb", "-D", s.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions")
	s.start()
	t.Cleanup(func() { s.pgctl("stop", "-m", "immediate") })
	s.DSN = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres", s.port)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, s.DSN)
		if err == nil {
			conn.Close(ctx)
			return s
		}
		if ctx.Err() != nil {
			t.Fatalf("the test server does not answer: %v\n%s", err, s.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Restart stops the server in mode ("fast": connections closed and a checkpoint; "immediate":
// every server process quits at once, and the start recovers from the WAL, as after a crash) and
// starts it again.
func (s *Server) Restart(mode string) {
	s.t.Helper()
	s.pgctl("stop", "-m", mode)
	s.start()
}

// Log returns what the server logged.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.log)
	return string(b)
}

func (s *Server) start() {
	s.t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off", s.port, filepath.Dir(s.data))
	s.pgctl("start", "-w", "-l", s.log, "-o", opts)
}

func (s *Server) pgctl(args ...string) {
	s.t.Helper()
	s.run("pg_ctl", append([]string{"-D", s.data}, args...)...)
}

func (s *Server) run(prog string, args ...string) {
	s.t.Helper()
	cmd := exec.Command(filepath.Join(s.bin, prog), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	cmd.Dir = filepath.Dir(s.data)
	if out, err := cmd.CombinedOutput(); err != nil {
		s.t.Fatalf("%s %s: %v\n%s\n%s", prog, strings.Join(args, " "), err, out, s.Log())
	}
}

// binDir finds the directory of initdb and pg_ctl.
func binDir() (string, error) {
	if d := os.Getenv("WEFT_TEST_PG_BIN"); d != "" {
		return d, nil
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		d := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(dirs) == 0 {
		return "", fmt.Errorf("initdb is not found (install the PostgreSQL server, or set WEFT_TEST_PG_BIN to the directory of initdb and pg_ctl)")
	}
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	return filepath.Dir(dirs[0]), nil
}

// version is the major version in a /usr/lib/postgresql/N/bin path.
func version(p string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p))))
	return n
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
