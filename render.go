package weft

import (
	"context"
	"fmt"
	"strings"
)

// EnvLookup resolves a variable for rendering: its value, whether it is secret, and whether it
// resolved at all.
type EnvLookup func(name string) (value string, secret bool, ok bool)

// Redacted replaces secret values wherever they would leave Weft: prompts, tool results, logs,
// events, API responses, CLI output and, as a last line of defence, the whole provider request.
const Redacted = "[redacted]"

// RenderSystem renders a prompt's static content: text parts verbatim, include parts replaced by the
// included prompt's rendered content (recursively), env parts by the variable's value — "" when
// unresolved, [redacted] when secret. Control characters other than tab and newline are stripped from
// env values. Include cycles are an error naming the cycle; a template prompt (a
// .prompty) contributes the system text of its own rendering.
// args are the arguments template prompts render with.
func (r *Registry) RenderSystem(ctx context.Context, name string, args map[string]any, env EnvLookup) (string, error) {
	var b strings.Builder
	if err := r.renderInto(ctx, &b, name, args, env, nil); err != nil {
		return "", err
	}
	return b.String(), nil
}

func (r *Registry) renderInto(ctx context.Context, b *strings.Builder, name string, args map[string]any, env EnvLookup, stack []string) error {
	for i, s := range stack {
		if s == name {
			return fmt.Errorf("prompt %q: circular include %s", stack[0], strings.Join(append(stack[i:], name), " → "))
		}
	}
	p, ok := r.prompts.get(name)
	if !ok {
		if len(stack) == 0 {
			return Errorf(ENotFound, "no prompt named %q", name)
		}
		return Errorf(EInvalid, "prompt %q includes %q, which is not defined", stack[len(stack)-1], name)
	}
	stack = append(stack, name)
	if p.Template != nil {
		out, err := p.Template.RenderPrompt(ctx, TemplateInput{Args: args, Env: env})
		if err != nil {
			return err
		}
		b.WriteString(out.System)
		return nil
	}
	for _, part := range p.Prompt {
		switch part.Type {
		case PartKindText:
			b.WriteString(part.Content)
		case PartKindInclude:
			if err := r.renderInto(ctx, b, part.Prompt, args, env, stack); err != nil {
				return err
			}
		case PartKindEnv:
			if env == nil {
				continue
			}
			v, secret, ok := env(part.Property)
			switch {
			case !ok:
			case secret:
				b.WriteString(Redacted)
			default:
				b.WriteString(SanitizeText(v))
			}
		}
	}
	return nil
}

// SanitizeText strips control characters other than tab, newline and carriage return, so that a
// value inserted into a prompt cannot smuggle terminal or protocol control sequences.
func SanitizeText(s string) string {
	clean := true
	for _, c := range s {
		if isStripped(c) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	return strings.Map(func(c rune) rune {
		if isStripped(c) {
			return -1
		}
		return c
	}, s)
}

func isStripped(c rune) bool {
	if c == '\t' || c == '\n' || c == '\r' {
		return false
	}
	return c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0)
}
