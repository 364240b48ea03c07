// Package weft is a runtime for AI agents that implements the Standard Agents specification
// (prompts, tools, agents, models, hooks, threads, subagents) and reads Prompty files.
//
// This root package holds the domain and runs no agent: the definitions (Model, Prompt, Tool, Agent,
// Hook, Effect, Handler) collected and validated in a Registry, the message and thread types, the
// State given to tools and hooks, the interfaces the rest is written against (Store, Provider,
// MCPClient, Clock) with the built-in providers' catalog, media types and error codes. It imports
// only schema (argument schemas); the packages built on it import it: prompty (the
// Prompty format), project (definition files), engine (runs threads), the stores (memstore, sqlite,
// postgres), the provider adapters (openai, anthropic, gemini, scripted), and the servers (httpapi
// and the protocol packages beside it). Only cmd/weft wires concrete implementations together;
// docs/architecture.md draws the packages and their imports.
package weft

import "github.com/weft-agents/weft/schema"

// Schema is a JSON Schema (a subset of 2020-12 with an object at the root) describing tool arguments.
type Schema = schema.Schema
