// Package memstore is a weft.Store kept in process memory as plain Go data: the fastest back end,
// for ephemeral threads, tests and library users who need no persistence. It keeps the same
// contract as the SQL stores (package storetest runs it against all of them), but nothing survives
// the process and leases are process-local.
//
// Each thread has its own locks, so concurrent threads never contend: a writer mutex serializes the
// thread's transactions (a Tx stages its writes and applies them at commit) and a read-write mutex
// guards the committed data, held only while copying in or out. Values handed in are copied and
// values handed out are copies, so callers may keep or change them freely. JSON-like maps are
// normalized on the way in (numbers become float64, as after a JSON round trip) so that memstore
// returns exactly what the SQL back ends return. Env values are encrypted with envcrypt like
// everywhere else.
package memstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/envcrypt"
)

// Options configure a Store.
type Options struct {
	// Key encrypts env values (32 bytes); nil means a random throwaway key.
	Key []byte
	// Now is the clock for timestamps and lease expiry; nil means time.Now.
	Now func() time.Time
}

// Store is an in-memory weft.Store. It is safe for concurrent use.
type Store struct {
	now    func() time.Time
	cipher *envcrypt.Cipher
	closed atomic.Bool

	threads sync.Map // thread id → *thread
	// children indexes threads by parent (parent id → *sync.Map of child ids), so listing a
	// thread's children does not scan every thread.
	children sync.Map

	envMu sync.RWMutex
	env   map[envOwner]map[string]envRow

	effects effects

	files  fileReader
	txPool sync.Pool

	auth authData
}

var _ weft.Store = (*Store)(nil)

// thread holds one thread's data. writer serializes transactions; mu guards every field below it
// for readers. Fields other than queue and the lease change only while writer is held, so a Tx may
// read them without mu.
type thread struct {
	writer sync.Mutex

	mu      sync.RWMutex
	deleted bool
	meta    weft.Thread // Tags, Properties and Arguments are never mutated in place

	msgSeq int64
	msgs   []*weft.Message // by seq; stored messages are immutable (updates replace them)
	byID   map[string]*weft.Message

	callSeq int64
	calls   []*weft.ToolCallRecord // by seq; immutable, replaced on update
	callIdx map[string]int

	queueSeq int64
	queue    []weft.QueuedMessage // by seq; PushQueue appends under mu only

	exec map[string]json.RawMessage

	logs   []*weft.LogEntry // in creation order; immutable, replaced on update; request bodies in reqBodies
	logIdx map[string]int
	// reqBodies keeps the logs' request bodies by log id (bodies.go); recent, the thread's last
	// ones, newest last.
	reqBodies map[string]*memBody
	recent    []recentBody

	kv map[string]json.RawMessage

	eventSeq int64
	events   []weft.EventRecord // the newest, by seq; pruned to weft.EventWindow
	files    map[string]*file   // immutable values; a Tx swaps in a new map

	leaseMu      sync.Mutex
	leaseOwner   string
	leaseToken   int64
	leaseExpires time.Time
}

// New returns an empty Store.
func New(opts Options) (*Store, error) {
	key := opts.Key
	if key == nil {
		key = envcrypt.NewKey()
	}
	c, err := envcrypt.New(key)
	if err != nil {
		return nil, fmt.Errorf("memstore: %w", err)
	}
	s := &Store{now: opts.Now, cipher: c, env: map[envOwner]map[string]envRow{}}
	if s.now == nil {
		s.now = time.Now
	}
	s.effects.init()
	s.files.s = s
	s.txPool.New = func() any { return &tx{s: s} }
	return s, nil
}

// Close marks the store closed; later calls fail. The data is dropped with the Store.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}

var errClosed = errors.New("memstore: store is closed")

func (s *Store) nowUTC() time.Time { return s.now().UTC() }

// lookup returns a live thread or nil.
func (s *Store) lookup(id string) *thread {
	v, ok := s.threads.Load(id)
	if !ok {
		return nil
	}
	return v.(*thread)
}

// get returns a live thread or a not-found error naming it.
func (s *Store) get(id string) (*thread, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	th := s.lookup(id)
	if th == nil {
		return nil, notFound(id)
	}
	return th, nil
}

func notFound(threadID string) error {
	return fmt.Errorf("thread %s: %w", threadID, weft.ErrNotFound)
}
