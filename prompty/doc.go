// Package prompty reads Weft's Prompty dialect (spec/prompty.md): it loads a .prompty file (front
// matter and body), renders the body with its template engine to segments, and parses the segments
// into messages. Structure — role markers, the thread placeholder, the tools block, tool calls and
// media — is recognised only in template text, never in values that came in through inputs.
package prompty
