package weft

// VarType is the type of a variable: text, or secret (encrypted at rest and redacted everywhere).
type VarType string

// The variable types.
const (
	VarText   VarType = "text"
	VarSecret VarType = "secret"
)

// VariableDefinition declares a variable a prompt or tool reads (seed 003 §3).
type VariableDefinition struct {
	// Name of the variable.
	Name string `json:"name"`
	// Type is text or secret.
	Type VarType `json:"type"`
	// Required: thread creation fails while no value resolves.
	Required bool `json:"required"`
	// Scoped blocks inheritance of this name from ancestor threads.
	Scoped bool `json:"scoped,omitempty"`
	// Description tells people what to provide.
	Description string `json:"description"`
}
