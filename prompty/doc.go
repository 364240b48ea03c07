// Package prompty reads Weft's Prompty dialect: .prompty files as Prompty's own runtimes write
// them, with Weft's additions (the thread placeholder, the tools block, tool calls and results,
// media parts). It loads a file (front matter and body), renders the body with its template engine
// (package tmpl: the Prompty Jinja subset or mustache) to segments, and parses the segments into
// messages. Structure — role markers, the thread placeholder, the tools block, tool calls and
// media — is recognised only in template text, never in values that came in through inputs, so an
// input cannot open a message of its own. docs/prompty.md says how a file's front matter maps onto
// Weft's definitions.
package prompty
