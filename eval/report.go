package eval

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is one eval run: every case's verdict and what it cost.
type Report struct {
	// ID names the run (`evr_` + ULID); Name, File and Agent are the eval's.
	ID    string `json:"id"`
	Name  string `json:"name"`
	File  string `json:"file"`
	Agent string `json:"agent"`
	// Model is the --model override ("" when the agent's own models ran).
	Model string `json:"model,omitempty"`
	// Repeat is how many times each case ran.
	Repeat     int       `json:"repeat"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	// Cases are the cases' verdicts in file order.
	Cases []CaseResult `json:"cases"`
	// Passed and Failed count cases; CostUSD is the agent's spend, JudgeCostUSD the judges'.
	Passed       int     `json:"passed"`
	Failed       int     `json:"failed"`
	CostUSD      float64 `json:"cost_usd"`
	JudgeCostUSD float64 `json:"judge_cost_usd"`
	// Baseline compares the run with an earlier one (nil when there is none).
	Baseline *Comparison `json:"baseline,omitempty"`
}

// CaseResult is a case's verdict over its runs.
type CaseResult struct {
	Name string `json:"name"`
	// Pass: at least the file's min_passes runs passed. Passes counts them; Flaky is set when
	// some runs passed and some failed.
	Pass   bool `json:"pass"`
	Passes int  `json:"passes"`
	Runs   int  `json:"runs"`
	Flaky  bool `json:"flaky,omitempty"`
	// Failure is the first failing expectation of the first failing run, with its actual value.
	Failure string `json:"failure,omitempty"`
	// CostUSD and JudgeCostUSD are means per run; LatencyMS the mean wall-clock time.
	CostUSD      float64 `json:"cost_usd"`
	JudgeCostUSD float64 `json:"judge_cost_usd"`
	LatencyMS    int64   `json:"latency_ms"`
	// Details are the runs.
	Details []CaseRun `json:"details"`
}

// CaseRun is one repetition of a case: its thread and each turn's outcome and verdicts.
type CaseRun struct {
	Case       string `json:"case"`
	Repetition int    `json:"repetition"`
	// ThreadID is the case's thread (`weft inspect`, `weft threads show`).
	ThreadID     string       `json:"thread_id,omitempty"`
	Pass         bool         `json:"pass"`
	Turns        []TurnResult `json:"turns"`
	CostUSD      float64      `json:"cost_usd"`
	JudgeCostUSD float64      `json:"judge_cost_usd"`
	LatencyMS    int64        `json:"latency_ms"`
	Tokens       int          `json:"tokens"`
	// Error is what kept the run from being checked (a thread not created, a model script failure).
	Error string `json:"error,omitempty"`
}

// TurnResult is one turn's outcome and its expectations' verdicts.
type TurnResult struct {
	Outcome
	Pass    bool     `json:"pass"`
	Results []Result `json:"results"`
}

func (t *TurnResult) judgeCost() float64 {
	var c float64
	for _, r := range t.Results {
		c += r.JudgeCostUSD
	}
	return c
}

// failure describes a run's first failure.
func (r *CaseRun) failure() string {
	if r.Error != "" {
		return r.Error
	}
	for i, t := range r.Turns {
		for _, x := range t.Results {
			if x.Pass {
				continue
			}
			s := x.Expectation
			if len(r.Turns) > 1 {
				s = fmt.Sprintf("turn %d: %s", i+1, s)
			}
			if x.Actual != "" {
				s += " — got " + x.Actual
			}
			if x.Reason != "" {
				s += " (" + x.Reason + ")"
			}
			return s
		}
	}
	return ""
}

func summarize(name string, runs []CaseRun, minPasses int) CaseResult {
	cr := CaseResult{Name: name, Runs: len(runs), Details: runs}
	var lat int64
	for i := range runs {
		r := &runs[i]
		if r.Pass {
			cr.Passes++
		} else if cr.Failure == "" {
			cr.Failure = r.failure()
		}
		cr.CostUSD += r.CostUSD
		cr.JudgeCostUSD += r.JudgeCostUSD
		lat += r.LatencyMS
	}
	if n := len(runs); n > 0 {
		cr.CostUSD /= float64(n)
		cr.JudgeCostUSD /= float64(n)
		cr.LatencyMS = lat / int64(n)
	}
	cr.Pass = cr.Passes >= minPasses
	cr.Flaky = cr.Passes > 0 && cr.Passes < len(runs)
	return cr
}

func (r *Report) total() {
	r.Passed, r.Failed, r.CostUSD, r.JudgeCostUSD = 0, 0, 0, 0
	for _, c := range r.Cases {
		if c.Pass {
			r.Passed++
		} else {
			r.Failed++
		}
		for _, d := range c.Details {
			r.CostUSD += d.CostUSD
			r.JudgeCostUSD += d.JudgeCostUSD
		}
	}
}

// OK reports whether every case passed.
func (r *Report) OK() bool { return r.Failed == 0 }

// Case returns a case's result by name.
func (r *Report) Case(name string) (*CaseResult, bool) {
	for i := range r.Cases {
		if r.Cases[i].Name == name {
			return &r.Cases[i], true
		}
	}
	return nil, false
}

// WriteTable writes the report as a terminal table: case, verdict, failing expectation with its
// actual value, cost and latency; then the totals and the baseline comparison.
func (r *Report) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tVERDICT\tCOST\tLATENCY\tFAILURE")
	for _, c := range r.Cases {
		v := "pass"
		if !c.Pass {
			v = "FAIL"
		}
		if c.Runs > 1 {
			v += fmt.Sprintf(" %d/%d", c.Passes, c.Runs)
			if c.Flaky {
				v += " flaky"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%dms\t%s\n", c.Name, v, usd(c.CostUSD), c.LatencyMS, oneLine(c.Failure))
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%s: %d passed, %d failed; cost %s (judges %s); run %s\n", r.Name, r.Passed, r.Failed, usd(r.CostUSD), usd(r.JudgeCostUSD), r.ID)
	if b := r.Baseline; b != nil {
		b.write(w)
	}
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > 160 {
		s = string(r[:160]) + "…"
	}
	return s
}

// usd shows a cost: cents with four decimals, smaller sums with six.
func usd(f float64) string {
	if f != 0 && f < 0.01 {
		return fmt.Sprintf("$%.6f", f)
	}
	return fmt.Sprintf("$%.4f", f)
}

// JUnit test-report types (the shape Jenkins, GitLab and GitHub readers take).
type (
	// JUnitSuites is the <testsuites> root.
	JUnitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Errors   int          `xml:"errors,attr"`
		Time     string       `xml:"time,attr"`
		Suites   []JUnitSuite `xml:"testsuite"`
	}
	// JUnitSuite is one <testsuite>: one eval file.
	JUnitSuite struct {
		Name       string          `xml:"name,attr"`
		Tests      int             `xml:"tests,attr"`
		Failures   int             `xml:"failures,attr"`
		Errors     int             `xml:"errors,attr"`
		Skipped    int             `xml:"skipped,attr"`
		Time       string          `xml:"time,attr"`
		Timestamp  string          `xml:"timestamp,attr"`
		Properties []JUnitProperty `xml:"properties>property"`
		Cases      []JUnitCase     `xml:"testcase"`
	}
	// JUnitProperty is one <property>.
	JUnitProperty struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	// JUnitCase is one <testcase>: one case.
	JUnitCase struct {
		Name      string        `xml:"name,attr"`
		ClassName string        `xml:"classname,attr"`
		Time      string        `xml:"time,attr"`
		Failure   *JUnitFailure `xml:"failure,omitempty"`
		SystemOut string        `xml:"system-out,omitempty"`
	}
	// JUnitFailure is a <failure>.
	JUnitFailure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
)

func seconds(ms int64) string { return fmt.Sprintf("%.3f", float64(ms)/1000) }

// JUnit returns the reports as a JUnit XML document, one suite per eval file.
func JUnit(reports []*Report) JUnitSuites {
	out := JUnitSuites{Name: "weft eval"}
	var all int64
	for _, r := range reports {
		s := JUnitSuite{Name: r.Name, Tests: len(r.Cases), Failures: r.Failed, Timestamp: r.StartedAt.Format(time.RFC3339),
			Properties: []JUnitProperty{{Name: "run", Value: r.ID}, {Name: "agent", Value: r.Agent}, {Name: "file", Value: r.File},
				{Name: "cost_usd", Value: fmt.Sprintf("%.6f", r.CostUSD)}, {Name: "judge_cost_usd", Value: fmt.Sprintf("%.6f", r.JudgeCostUSD)}}}
		var ms int64
		for _, c := range r.Cases {
			tc := JUnitCase{Name: c.Name, ClassName: r.Name, Time: seconds(c.LatencyMS)}
			ms += c.LatencyMS
			var threads []string
			for _, d := range c.Details {
				if d.ThreadID != "" {
					threads = append(threads, d.ThreadID)
				}
			}
			tc.SystemOut = fmt.Sprintf("passes %d/%d; cost %s; threads %s", c.Passes, c.Runs, usd(c.CostUSD), strings.Join(threads, " "))
			if !c.Pass {
				tc.Failure = &JUnitFailure{Message: oneLine(c.Failure), Type: "expectation", Text: c.Failure}
			}
			s.Cases = append(s.Cases, tc)
		}
		s.Time = seconds(ms)
		all += ms
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Suites = append(out.Suites, s)
	}
	out.Time = seconds(all)
	return out
}

// WriteJUnit writes the reports as JUnit XML.
func WriteJUnit(w io.Writer, reports []*Report) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(JUnit(reports)); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
