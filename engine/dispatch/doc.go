// Package dispatch holds what a run's tool dispatcher owns: the records of a reply's tool calls as
// the run stored them (Calls), a call's approval state and a person's decision on it, the tools a
// thread's client runs itself, the calls of MCP server tools and of Go, command and http tools
// with their timeouts, a tool result's message text and attachments, the check of a call's
// arguments, the replies a resumed run finishes, structured values and calls as stored, and the
// requests for a subagent's missing variables. The run drives the calls — one at a time, each
// result stored before the next starts — and commits what they write; this package decides what
// is written, and never writes itself.
//
// Two things are called "declared" near here and are kept apart by name. Declared tools are the
// command and http tools a definition declares, run by package declared: DefinedTool builds their
// handler, and RunTool runs it as it runs a Go tool. Declared variables are the variables an
// agent's prompts and tools declare, with their types (package vars): this package meets them
// only in a variables request (NewEnvRequest), and calls them variables, never "declared".
package dispatch
