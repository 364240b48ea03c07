// Package dispatch is a run's tool dispatcher and what it owns. A Dispatcher runs a reply's tool
// calls strictly one at a time in the order the model returned them, each result stored before the
// next call starts; it waits for a person's decision on a call that needs one, runs the tools a
// State queued, finishes the calls a crashed or parked run left open, and answers them when a user
// stops the run. It reaches the run loop only through two narrow interfaces: Run, the run (its
// state, transactions, rows, events and hooks, and calling the tool a prompt offers) and Scope,
// the prompt whose calls it runs. Outside a run, Threads is the engine's side of deciding a call,
// delivering a client's result, setting a thread's client tools and reading a variables request.
//
// It also holds what needs no run: the records of a reply's tool calls as the run stored them
// (Calls), a call's approval state and a person's decision on it, the tools a thread's client runs
// itself, the calls of MCP server tools and of Go, command and http tools with their timeouts, a
// tool result's message text and attachments, the check of a call's arguments, structured values
// and calls as stored, and the requests for a subagent's missing variables.
//
// Two things are called "declared" near here and are kept apart by name. Declared tools are the
// command and http tools a definition declares, run by package declared: DefinedTool builds their
// handler, and RunTool runs it as it runs a Go tool. Declared variables are the variables an
// agent's prompts and tools declare, with their types (package vars): this package meets them
// only in a variables request (NewEnvRequest), and calls them variables, never "declared".
package dispatch
