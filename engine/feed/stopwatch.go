package feed

import "github.com/weft-agents/weft"

// StopWatches are Ask's: they are told the stops of a thread's runs, whichever goroutine runs them,
// without making the engine observed: with nobody else listening, no event is built.
type StopWatches struct {
	listeners[string, StopWatch]
}

// StopWatch gathers one thread's stops, under the watches' lock.
type StopWatch struct {
	thread string
	stops  []weft.StopInfo
	// redactions counts the final lines the runs held back for redaction (RunResult).
	redactions int
	reply      *weft.Message // the last reply a run stored (RunResult.Reply)
}

func (w *StopWatches) Add(thread string) *StopWatch {
	return w.listeners.add(thread, &StopWatch{thread: thread})
}

func (w *StopWatches) Remove(sw *StopWatch) { w.listeners.remove(sw.thread, sw) }

// Note tells the thread's watches of a run's stop and the last reply it stored (nil: none).
func (w *StopWatches) Note(thread string, info weft.StopInfo, redactions int, reply *weft.Message) {
	if w.n.Load() == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, sw := range w.by[thread] {
		sw.stops = append(sw.stops, info)
		sw.redactions += redactions
		if reply != nil {
			sw.reply = reply
		}
	}
}

// Taken returns the stops noted so far on sw, the redactions and the last reply.
func (w *StopWatches) Taken(sw *StopWatch) ([]weft.StopInfo, int, *weft.Message) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return sw.stops, sw.redactions, sw.reply
}
