package weft

import (
	"reflect"
	"testing"
)

// TestBudgetProblems: a budget reports every problem at once, each naming its field; Check is
// the first of them.
func TestBudgetProblems(t *testing.T) {
	cases := []struct {
		name   string
		b      Budget
		fields []string
	}{
		{"cost cap", Budget{MaxCostUSD: 2}, nil},
		{"token cap and block", Budget{MaxTokens: 1000, UnknownCost: "block"}, nil},
		{"no cap", Budget{}, []string{"maxCostUsd"}},
		{"no cap and a bad unknownCost", Budget{UnknownCost: "maybe"}, []string{"maxCostUsd", "unknownCost"}},
		{"negative caps", Budget{MaxCostUSD: -1, MaxTokens: -5}, []string{"maxCostUsd", "maxTokens"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var fields []string
			for _, p := range tc.b.Problems() {
				fields = append(fields, p[0])
				if p[1] == "" {
					t.Errorf("%s: no problem text", p[0])
				}
			}
			if !reflect.DeepEqual(fields, tc.fields) {
				t.Errorf("fields %v, want %v", fields, tc.fields)
			}
			field, problem := tc.b.Check()
			if (len(tc.fields) == 0) != (problem == "") || (len(tc.fields) > 0 && field != tc.fields[0]) {
				t.Errorf("Check = %q %q", field, problem)
			}
		})
	}
}

// TestValidateReportsEveryBudgetProblem: validation lists each of an agent budget's problems.
func TestValidateReportsEveryBudgetProblem(t *testing.T) {
	reg := NewRegistry()
	reg.AddModel(&Model{Name: "m", Provider: "test", Model: "m"})
	reg.AddPrompt(&Prompt{Name: "p", ToolDescription: "d", Model: "m", Prompt: Text("Hi.")})
	reg.AddAgent(&Agent{Name: "a", SideA: AgentSide{Prompt: "p"}, Budget: &Budget{UnknownCost: "maybe"}})
	d := reg.Validate()
	var got []string
	for _, x := range d {
		if x.Severity == SeverityError {
			got = append(got, x.Path)
		}
	}
	if want := []string{"budget.maxCostUsd", "budget.unknownCost"}; !reflect.DeepEqual(got, want) {
		t.Errorf("error fields %v, want %v (%v)", got, want, d)
	}
}
