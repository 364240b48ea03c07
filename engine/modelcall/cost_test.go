package modelcall

import (
	"math/big"
	"strconv"
	"testing"

	"github.com/weft-agents/weft"
)

// TestCostIsTheDecimal: a call's cost prints as the exact decimal of tokens × price (it printed
// 0.000023549999999999996 where the cost is 0.00002355).
func TestCostIsTheDecimal(t *testing.T) {
	in, out := 0.15, 0.60 // USD per million tokens
	m := &weft.Model{InputPrice: &in, OutputPrice: &out}
	for _, tc := range []struct{ input, output int }{{7, 6}, {37, 30}, {113, 11}, {1, 1}, {123457, 98765}} {
		for _, u := range []weft.Usage{{InputTokens: tc.input, OutputTokens: tc.output}} {
			_, _, _, total := cost(m, u)
			// tokens × 0.15 / 1e6 = tokens × 15 / 1e8, exactly.
			want := new(big.Rat).SetFrac64(int64(u.InputTokens*15+u.OutputTokens*60), 100_000_000)
			got, _ := new(big.Rat).SetString(strconv.FormatFloat(*total, 'f', -1, 64))
			if got.Cmp(want) != 0 {
				t.Errorf("%d in, %d out: cost %s, want %s", u.InputTokens, u.OutputTokens, strconv.FormatFloat(*total, 'f', -1, 64), want.FloatString(10))
			}
		}
	}
	// Sums stay decimal too.
	a, b := 0.1, 0.2
	if s := weft.RoundUSD(a + b); strconv.FormatFloat(s, 'f', -1, 64) != "0.3" {
		t.Errorf("0.1 + 0.2 = %v", s)
	}
}
