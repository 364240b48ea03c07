// Package engine runs agents. A thread's run alternates model steps and tool calls until a stop
// reason: a step assembles the context from the thread's stored rows, calls the model through a
// weft.Provider, stores the reply with its pending tool calls, then runs the calls one at a time,
// storing each result before the next starts. Every change of a run that must survive a crash is
// one transaction of the thread, fenced by the run's lease; every transaction the engine opens
// goes through its committer (engine/journal), which redacts the thread's secrets from every
// row, call record, log and event it writes. Providers and tools are called only after the transaction that
// makes their step resumable has committed, so a run that dies is resumed from its rows without
// losing a message or running a non-idempotent tool twice.
//
// The engine knows the root package's interfaces (weft.Store, weft.Provider, weft.MCPClient),
// never a concrete store or model provider: cmd/weft wires those in. Declared command and http
// tools run through package declared. Converse and Ask run a thread in the caller's goroutine;
// Serve is the scheduler of a long-lived process (a worker per thread with work, due effects, and
// the recovery of what a stopped process left). docs/architecture.md maps the package's files:
// where a tool call is dispatched, what a step writes, how a subagent is resumed.
package engine
