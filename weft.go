// Package weft is a runtime for AI agents that implements the Standard Agents specification
// (prompts, tools, agents, models, hooks, threads, subagents) and reads Prompty files.
//
// This root package holds the domain: definitions (Model, Prompt, Tool, Agent, Hook, Effect,
// Handler) collected in a Registry, the message and thread types, the State given to tools and hooks,
// and error codes. Implementations live in packages named after what they depend on: schema
// (argument schemas), prompty (the Prompty format), project (definition files), and later the
// engine, stores and provider adapters. Wiring happens only under cmd/.
package weft

import "github.com/weft-agents/weft/schema"

// Schema is a JSON Schema (a subset of 2020-12 with an object at the root) describing tool arguments.
type Schema = schema.Schema
