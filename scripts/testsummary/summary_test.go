package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	const pgReason = "WEFT_TEST_POSTGRES_URL is not set: PostgreSQL tests skipped."
	in := strings.Join([]string{
		`{"Action":"run","Package":"github.com/weft-agents/weft/postgres","Test":"TestStore"}`,
		`{"Action":"output","Package":"github.com/weft-agents/weft/postgres","Test":"TestStore","Output":"=== RUN   TestStore\n"}`,
		`{"Action":"output","Package":"github.com/weft-agents/weft/postgres","Test":"TestStore","Output":"    store_test.go:20: ` + pgReason + `\n"}`,
		`{"Action":"output","Package":"github.com/weft-agents/weft/postgres","Test":"TestStore","Output":"--- SKIP: TestStore (0.00s)\n"}`,
		`{"Action":"skip","Package":"github.com/weft-agents/weft/postgres","Test":"TestStore"}`,
		`{"Action":"output","Package":"github.com/weft-agents/weft/cmd/weft","Test":"TestCluster","Output":"    cluster_test.go:9: ` + pgReason + `\n"}`,
		`{"Action":"skip","Package":"github.com/weft-agents/weft/cmd/weft","Test":"TestCluster"}`,
		`{"Action":"output","Package":"github.com/weft-agents/weft/prompty","Test":"TestFixtures","Output":"    f_test.go:3: ../shared/prompty-fixtures not found\n"}`,
		`{"Action":"skip","Package":"github.com/weft-agents/weft/prompty","Test":"TestFixtures"}`,
		`{"Action":"output","Package":"github.com/weft-agents/weft/postgres","Test":"TestStore/Sub","Output":"    store_test.go:20: ` + pgReason + `\n"}`,
		`{"Action":"skip","Package":"github.com/weft-agents/weft/postgres","Test":"TestStore/Sub"}`,
		`{"Action":"pass","Package":"github.com/weft-agents/weft/postgres","Elapsed":0.5}`,
		`{"Action":"output","Package":"github.com/weft-agents/weft/engine","Test":"TestX","Output":"    x_test.go:1: boom\n"}`,
		`{"Action":"fail","Package":"github.com/weft-agents/weft/engine","Test":"TestX"}`,
		`{"Action":"fail","Package":"github.com/weft-agents/weft/engine","Elapsed":1.25}`,
		`# github.com/weft-agents/weft/broken`,
	}, "\n") + "\n"
	var out bytes.Buffer
	failed, err := summarize(strings.NewReader(in), &out)
	if err != nil || !failed {
		t.Fatalf("failed %v, err %v", failed, err)
	}
	want := "ok  \tgithub.com/weft-agents/weft/postgres\t0.500s\n" +
		"    x_test.go:1: boom\n" +
		"FAIL\tgithub.com/weft-agents/weft/engine\t1.250s\n" +
		"# github.com/weft-agents/weft/broken\n" +
		"SKIPPED 3 suites: cmd/weft.TestCluster, postgres.TestStore (" + pgReason + "); prompty.TestFixtures (../shared/prompty-fixtures not found)\n"
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
	// Nothing skipped: no line; all passed: not failed.
	out.Reset()
	failed, _ = summarize(strings.NewReader(`{"Action":"pass","Package":"p","Elapsed":0}`+"\n"), &out)
	if failed || out.String() != "ok  \tp\t0.000s\n" {
		t.Errorf("failed %v, out %q", failed, out.String())
	}
}

func FuzzSummarize(f *testing.F) {
	f.Add(`{"Action":"skip","Package":"p","Test":"T"}` + "\n")
	f.Add(`{"Action":"output","Package":"p","Test":"T","Output":"a.go:1: why\n"}` + "\n" + `{"Action":"skip","Package":"p","Test":"T"}`)
	f.Add("not json\n{}\n")
	f.Fuzz(func(t *testing.T, in string) {
		var out bytes.Buffer
		if _, err := summarize(strings.NewReader(in), &out); err != nil {
			t.Skip() // a line longer than the scanner's buffer
		}
		if n, m := strings.Count(out.String(), "SKIPPED "), strings.Count(in, "SKIPPED "); n > m+1 {
			t.Fatalf("%d skip lines from an input with %d", n, m)
		}
	})
}
