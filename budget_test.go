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
