package postgres

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weft-agents/weft"
)

// The LISTEN/NOTIFY channels, through which every node learns of events, effects and queued
// messages that another node committed. Notifications are sent inside the transactions
// whose commits they report, so PostgreSQL delivers them exactly when, and only if, those commit.
const (
	// channelEvents carries "<thread id> <seq>": the thread's event log grew to seq.
	channelEvents = "weft_events"
	// channelEffects carries nothing: an effect was scheduled or rescheduled.
	channelEffects = "weft_effects"
	// channelQueue carries "<thread id>": a message was queued on the thread.
	channelQueue = "weft_queue"
)

var _ weft.Notifier = (*Store)(nil)

// notifier tells the processes's own notifications from others': it knows the backend pids of the
// store's pool connections.
type notifier struct {
	mu     sync.Mutex
	pids   map[uint32]struct{}
	closed chan struct{}
	once   sync.Once
}

func newNotifier() *notifier {
	return &notifier{pids: map[uint32]struct{}{}, closed: make(chan struct{})}
}

// hook records the pool's connections as they come and go.
func (n *notifier) hook(cfg *pgxpool.Config) {
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		n.mu.Lock()
		n.pids[c.PgConn().PID()] = struct{}{}
		n.mu.Unlock()
		return nil
	}
	cfg.BeforeClose = func(c *pgx.Conn) {
		n.mu.Lock()
		delete(n.pids, c.PgConn().PID())
		n.mu.Unlock()
	}
}

func (n *notifier) own(pid uint32) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.pids[pid]
	return ok
}

func (n *notifier) close() { n.once.Do(func() { close(n.closed) }) }

// Watch listens for other processes' commits on a connection of its own and calls fn with each,
// until ctx ends or the store is closed. fn gets a NoticeReset once the connection listens, and
// again each time a dropped connection is reopened (backing off up to 5 s): notifications sent
// meanwhile are lost, so the watcher re-reads the store.
func (s *Store) Watch(ctx context.Context, fn func(weft.Notice)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.notify.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := s.listen(ctx, fn, func() { backoff = 100 * time.Millisecond })
		if ctx.Err() != nil {
			break
		}
		s.log.Warn("postgres: notification connection lost; reconnecting", "error", err, "retry_in", backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		}
		backoff = min(2*backoff, 5*time.Second)
	}
	return nil
}

// listen opens a connection, listens, and delivers notices until the connection fails.
func (s *Store) listen(ctx context.Context, fn func(weft.Notice), connected func()) error {
	conn, err := pgx.ConnectConfig(ctx, s.cfg.ConnConfig)
	if err != nil {
		return s.connErr(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, ch := range []string{channelEvents, channelEffects, channelQueue} {
		if _, err := conn.Exec(ctx, "LISTEN "+ch); err != nil {
			return err
		}
	}
	connected()
	fn(weft.Notice{Kind: weft.NoticeReset})
	for {
		nt, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if s.notify.own(nt.PID) {
			continue
		}
		switch nt.Channel {
		case channelEffects:
			fn(weft.Notice{Kind: weft.NoticeEffect})
		case channelQueue:
			fn(weft.Notice{Kind: weft.NoticeQueued, ThreadID: nt.Payload})
		case channelEvents:
			id, seq, ok := strings.Cut(nt.Payload, " ")
			n, err := strconv.ParseInt(seq, 10, 64)
			if ok && err == nil {
				fn(weft.Notice{Kind: weft.NoticeEvents, ThreadID: id, Seq: n})
			}
		}
	}
}
