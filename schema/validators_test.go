package schema

import "testing"

// TestValidators: a schema is compiled once, its Validator kept and validating as Compile's
// would; a schema that does not compile is an error, and nothing is kept for it.
func TestValidators(t *testing.T) {
	var vs Validators
	s := Object(Prop{Name: "n", Schema: Integer()})
	first, err := vs.Of(s)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := vs.Of(s); again != first {
		t.Errorf("Of compiled the schema again")
	}
	if _, err := first.Validate(map[string]any{}); err == nil {
		t.Errorf("the kept Validator accepts an object without its required property")
	}
	bad := &Schema{Type: "string", Pattern: "("}
	if _, err := vs.Of(bad); err == nil {
		t.Errorf("Of(%+v) = nil error", bad)
	}
	if _, kept := vs.m.Load(bad); kept {
		t.Errorf("a schema that did not compile was kept")
	}
}
