package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestEvalSupportExample runs the example eval as a user would, offline: it passes, is stored,
// and a second run compares with the first.
func TestEvalSupportExample(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "weft.db")
	agents := repo("examples/support/agents")
	out, errOut, code := runWeft(t, dir, "eval", "--dir", agents, "--db", db)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"shipped order", "unpaid order", "asks for the number first", "support: 3 passed, 0 failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, errOut, code = runWeft(t, dir, "eval", "--dir", agents, "--db", db, "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var doc struct {
		OK      bool `json:"ok"`
		Reports []struct {
			ID       string `json:"id"`
			Passed   int    `json:"passed"`
			Baseline *struct {
				Run       string   `json:"run"`
				Regressed []string `json:"regressed"`
			} `json:"baseline"`
			Cases []struct {
				Details []struct {
					ThreadID string `json:"thread_id"`
				} `json:"details"`
			} `json:"cases"`
		} `json:"reports"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	r := doc.Reports[0]
	if !doc.OK || r.Passed != 3 || r.Baseline == nil || r.Baseline.Run == "" || len(r.Baseline.Regressed) != 0 {
		t.Fatalf("%s", out)
	}
	// The case's thread is in the store with its verdict.
	thread := r.Cases[0].Details[0].ThreadID
	out, errOut, code = runWeft(t, dir, "threads", "export", thread, "--db", db)
	if code != 0 || !strings.Contains(out, `"eval_verdict": "pass"`) || !strings.Contains(out, r.ID) {
		t.Errorf("exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestEvalRedPath: the example's failing case fails, with its actual value, the JUnit file says
// so, and the exit status is 1.
func TestEvalRedPath(t *testing.T) {
	dir := t.TempDir()
	junit := filepath.Join(dir, "junit.xml")
	out, errOut, code := runWeft(t, dir, "eval", repo("examples/support/evals-red"), "--dir", repo("examples/support/agents"),
		"--db", ":memory:", "--junit", junit)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, `no delivery promise       FAIL`) || !strings.Contains(out, `not_contains "tomorrow" — got "Order 43 is awaiting payment, but don't worry, it will arrive tomorrow!"`) ||
		!strings.Contains(out, "1 passed, 1 failed") {
		t.Errorf("table:\n%s", out)
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &suites); err != nil {
		t.Fatal(err)
	}
	if suites.Tests != 2 || suites.Failures != 1 || suites.Suites[0].Cases[0].Failure == nil || suites.Suites[0].Cases[1].Failure != nil {
		t.Errorf("%s", data)
	}
}

func TestEvalRecordReplayAndErrors(t *testing.T) {
	dir := t.TempDir()
	agents := repo("examples/support/agents")
	rec := filepath.Join(dir, "rec.json")
	out, errOut, code := runWeft(t, dir, "eval", repo("examples/support/evals/support.yaml"), "--dir", agents, "--db", ":memory:", "--record", rec, "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	// Replayed from a copy of the eval whose scripts answer otherwise: same verdicts, no network.
	evals := filepath.Join(dir, "evals")
	os.MkdirAll(filepath.Join(evals, "judges"), 0o755)
	os.MkdirAll(filepath.Join(evals, "scripts"), 0o755)
	src, _ := os.ReadFile(repo("examples/support/evals/support.yaml"))
	judge, _ := os.ReadFile(repo("examples/support/evals/judges/helpful.prompty"))
	os.WriteFile(filepath.Join(evals, "support.yaml"), src, 0o600)
	os.WriteFile(filepath.Join(evals, "judges/helpful.prompty"), judge, 0o600)
	for _, s := range []string{"shipped", "unpaid", "multiturn"} {
		os.WriteFile(filepath.Join(evals, "scripts", s+".yaml"), []byte("- {text: changed}\n"), 0o600)
	}
	out2, errOut, code := runWeft(t, dir, "eval", evals, "--dir", agents, "--db", ":memory:", "--replay", rec, "--json")
	if code != 0 {
		t.Fatalf("replay exit %d\n%s\n%s", code, out2, errOut)
	}
	if a, b := verdictsOf(t, out), verdictsOf(t, out2); a != b {
		t.Errorf("verdicts differ:\n%s\n%s", a, b)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"invalid_file", []string{"eval", "bad.yaml"}, 2, "bad.yaml: cases[0].expect[0].contain: unknown expectation"},
		{"unknown_agent", []string{"eval", "ghost.yaml"}, 2, `ghost.yaml: agent: no agent named "ghost"`},
		{"missing_default_dir", []string{"eval", "--dir", filepath.Join(dir, "none", "agents")}, 2, "evals: no such file or directory"},
		{"record_and_replay", []string{"eval", "bad.yaml", "--record", "a", "--replay", "b"}, 2, "--record and --replay exclude each other"},
		{"unknown_model", []string{"eval", repo("examples/support/evals/support.yaml"), "--model", "nope"}, 2, `--model: no model named "nope" in the project`},
	}
	os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("agent: support\ncases: [{name: c, input: i, expect: [{contain: x}]}]\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "ghost.yaml"), []byte("agent: ghost\ncases: [{name: c, input: i, expect: []}]\n"), 0o600)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append(tc.args, "--db", ":memory:")
			if !strings.Contains(strings.Join(tc.args, " "), "--dir") {
				args = append(args, "--dir", agents)
			}
			out, errOut, code := runWeft(t, dir, args...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, want %d; stderr lacks %q\n%s\n%s", code, tc.code, tc.want, out, errOut)
			}
		})
	}
}

// verdictsOf lists the expectations' verdicts of a --json output.
func verdictsOf(t *testing.T, out string) string {
	t.Helper()
	var doc struct {
		Reports []struct {
			Cases []struct {
				Name    string `json:"name"`
				Details []struct {
					Turns []struct {
						Results []struct {
							Expectation string `json:"expectation"`
							Pass        bool   `json:"pass"`
							Actual      string `json:"actual"`
						} `json:"results"`
					} `json:"turns"`
				} `json:"details"`
			} `json:"cases"`
		} `json:"reports"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var b strings.Builder
	for _, r := range doc.Reports {
		for _, c := range r.Cases {
			for _, d := range c.Details {
				for _, tr := range d.Turns {
					for _, x := range tr.Results {
						b.WriteString(c.Name + "/" + x.Expectation + " " + x.Actual)
						if x.Pass {
							b.WriteString(" pass\n")
						} else {
							b.WriteString(" FAIL\n")
						}
					}
				}
			}
		}
	}
	return b.String()
}

// TestServeEvals: POST /api/evals runs an eval file of the project's evals directory on the
// server, stores the run, and GET /api/evals lists it; the case threads are the server's.
func TestServeEvals(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, nil, "--dir", repo("examples/support/agents"), "--db", filepath.Join(dir, "serve.db"), "--no-auth")
	defer s.stop()
	var rep struct {
		ID     string `json:"id"`
		Passed int    `json:"passed"`
		Failed int    `json:"failed"`
		Cases  []struct {
			Details []struct {
				ThreadID string `json:"thread_id"`
			} `json:"details"`
		} `json:"cases"`
	}
	s.must("POST", "/api/evals", "", `{"file": "support.yaml"}`, 200, &rep)
	if rep.Passed != 3 || rep.Failed != 0 || rep.ID == "" {
		t.Fatalf("%+v", rep)
	}
	// Posted content resolves its paths against the evals directory.
	var posted struct {
		Name   string `json:"name"`
		Failed int    `json:"failed"`
	}
	s.must("POST", "/api/evals", "", `{"file": "mine.yaml", "content": "agent: support\ncases: [{name: c, model_script: scripts/unpaid.yaml, input: Did order 43 ship?, expect: [{contains: shipped already}]}]\n"}`, 200, &posted)
	if posted.Name != "mine" || posted.Failed != 1 {
		t.Errorf("%+v", posted)
	}
	var list struct {
		Items []struct {
			ID     string `json:"id"`
			Name   string `json:"name"`
			Passed int    `json:"passed"`
		} `json:"items"`
	}
	s.must("GET", "/api/evals", "", "", 200, &list)
	if len(list.Items) != 2 || list.Items[1].ID != rep.ID || list.Items[1].Passed != 3 {
		t.Errorf("%+v", list)
	}
	s.must("GET", "/api/evals/"+rep.ID, "", "", 200, nil)
	var th struct {
		Properties map[string]any `json:"properties"`
	}
	s.must("GET", "/api/threads/"+rep.Cases[0].Details[0].ThreadID, "", "", 200, &th)
	if th.Properties["eval_verdict"] != "pass" || th.Properties["eval_run"] != rep.ID {
		t.Errorf("case thread %+v", th)
	}
	for _, tc := range []struct {
		body string
		code int
		want string
	}{
		{`{"file": "../secrets.yaml"}`, 400, "name a file inside the evals directory"},
		{`{"file": "none.yaml"}`, 400, "none.yaml: cannot read: no such file or directory"},
		{`{"content": "agent: support\ncases: []\n"}`, 400, "posted.yaml: cases: must list at least one case"},
		{`{}`, 400, "file or content: one is required"},
	} {
		if code, out := s.call("POST", "/api/evals", "", tc.body); code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%s: %d %s, want %d %q", tc.body, code, out, tc.code, tc.want)
		}
	}
	if code, _ := s.call("GET", "/api/evals/evr_none", "", ""); code != 404 {
		t.Errorf("unknown run: %d", code)
	}
}

// TestInspectorEvals: the inspector's evals page shows each eval's runs with their pass rate, a
// run's cases with the failing expectation, and a case's thread shows its verdicts above its
// transcript.
func TestInspectorEvals(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "weft.db")
	agents := repo("examples/support/agents")
	for _, args := range [][]string{{"eval"}, {"eval"}, {"eval", repo("examples/support/evals-red")}} {
		if out, errOut, code := runWeft(t, dir, append(args, "--dir", agents, "--db", db)...); code > 1 {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, out, errOut)
		}
	}
	s := startInspect(t, dir, "--dir", agents, "--db", db)
	act(t, ctx, "open the evals page", chromedp.Navigate(s.base+"/evals"), chromedp.WaitVisible(`.eval-runs`))
	waitJS(t, ctx, "two runs of support with their trend", `document.querySelectorAll('.eval-runs[data-eval="support"] tbody tr').length === 2 &&
		document.querySelectorAll('.eval-runs[data-eval="support"] .trend .bar').length === 2`)
	waitJS(t, ctx, "the red eval's run at 50%", `document.querySelector('.eval-runs[data-eval="support-promises"] tbody tr').innerText.includes('50%')`)
	act(t, ctx, "open the red run", chromedp.Click(`.eval-runs[data-eval="support-promises"] tbody tr a`), chromedp.WaitVisible(`#eval-cases`))
	waitJS(t, ctx, "the failing case with what the agent said", `document.querySelector('#eval-cases tr[data-case="no delivery promise"] .failure').textContent.includes('not_contains "tomorrow" — got')`)
	act(t, ctx, "open its thread", chromedp.Click(`#eval-cases tr[data-case="no delivery promise"] td:last-child a`), chromedp.WaitVisible(`#timeline .msg`))
	waitJS(t, ctx, "the verdicts above the transcript", `(() => { const b = document.getElementById('eval-verdict');
		return b && b.innerText.includes('✓ tool_called lookup_order') && b.querySelector('li.fail') &&
		  b.querySelector('li.fail').innerText.includes('✗ not_contains "tomorrow"') })()`)
	shot(t, ctx, "eval-thread")
}
