package httpapi

import (
	"context"
	"sync"
	"time"

	"github.com/weft-agents/weft"
)

// keyCheckInterval is how often the keys of open streams are checked: a stream of a key revoked
// anywhere (another node, the CLI) ends within it.
const keyCheckInterval = 500 * time.Millisecond

// keyStreams ends the open streams of revoked keys. Each stream registers the hash of the key it
// was opened with; while any is open, one goroutine checks those keys every keyCheckInterval
// (one store read per distinct key) and ends the streams of a key the store no longer knows.
type keyStreams struct {
	mu       sync.Mutex
	byHash   map[string]map[*context.CancelFunc]struct{}
	checking bool
	// now asks the checking goroutine for a check at once (a key revoked here).
	now chan struct{}
}

// keyBound returns a context for a stream of p that also ends when p's key is revoked.
func (s *Server) keyBound(ctx context.Context, p *principal) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if p.keyHash == "" || s.opt.Auth == nil {
		return ctx, cancel
	}
	k := &s.keys
	k.mu.Lock()
	if k.byHash == nil {
		k.byHash = map[string]map[*context.CancelFunc]struct{}{}
		k.now = make(chan struct{}, 1)
	}
	set := k.byHash[p.keyHash]
	if set == nil {
		set = map[*context.CancelFunc]struct{}{}
		k.byHash[p.keyHash] = set
	}
	set[&cancel] = struct{}{}
	if !k.checking {
		k.checking = true
		go s.checkKeys()
	}
	k.mu.Unlock()
	return ctx, func() {
		k.mu.Lock()
		delete(set, &cancel)
		if cur, ok := k.byHash[p.keyHash]; ok && len(cur) == 0 {
			delete(k.byHash, p.keyHash)
		}
		k.mu.Unlock()
		cancel()
	}
}

// keyRevoked asks for a check of the open streams' keys now.
func (s *Server) keyRevoked() {
	s.keys.mu.Lock()
	defer s.keys.mu.Unlock()
	if s.keys.now != nil {
		select {
		case s.keys.now <- struct{}{}:
		default:
		}
	}
}

// checkKeys runs while streams are open: it ends the streams of keys that are gone.
func (s *Server) checkKeys() {
	k := &s.keys
	tick := time.NewTicker(keyCheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-k.now:
		}
		k.mu.Lock()
		if len(k.byHash) == 0 {
			k.checking = false
			k.mu.Unlock()
			return
		}
		hashes := make([]string, 0, len(k.byHash))
		for h := range k.byHash {
			hashes = append(hashes, h)
		}
		k.mu.Unlock()
		for _, h := range hashes {
			ctx, cancel := context.WithTimeout(context.Background(), keyCheckInterval)
			_, err := s.opt.Auth.KeyByHash(ctx, h)
			cancel()
			if weft.ErrorCode(err) != weft.ENotFound {
				continue // valid, or the store cannot tell now: the stream goes on
			}
			s.tickets.revoke(h)
			k.mu.Lock()
			for c := range k.byHash[h] {
				(*c)()
			}
			k.mu.Unlock()
		}
	}
}
