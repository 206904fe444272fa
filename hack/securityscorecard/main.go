// Command securityscorecard runs the repository's hostile-input tests (cases.go) and prints the
// security scorecard of docs/security.md: how many hostile inputs were tried, by class, and how many of
// them crashed the operator, leaked a secret, bypassed a policy, made it a deputy or starved
// another tenant. The numbers are counted from `go test -json`, never typed in: each leaf test and
// each fuzz seed is one input, and a failed one is a finding of its class.
//
// Usage (make security-scorecard): go run ./hack/securityscorecard [-out file]
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
)

// event is one line of `go test -json` (test2json).
type event struct {
	Action  string
	Package string
	Test    string
}

// outcome counts the leaf tests of one case.
type outcome struct {
	Passed, Failed, Skipped int
}

func (o outcome) inputs() int { return o.Passed + o.Failed + o.Skipped }

func main() {
	out := flag.String("out", "", "also write the table to this file")
	flag.Parse()
	results, err := run(cases, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "securityscorecard:", err)
		os.Exit(2)
	}
	var buf bytes.Buffer
	bad := write(&buf, cases, results)
	fmt.Print(buf.String())
	if *out != "" {
		if err := os.WriteFile(*out, buf.Bytes(), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "securityscorecard:", err)
			os.Exit(2)
		}
	}
	if bad {
		os.Exit(1)
	}
}

// group is one `go test` invocation: a package and the tests of every case in it.
type group struct {
	pkg     string
	envtest bool
	tests   []string
}

// run executes each package's listed tests once and attributes every leaf test to its case.
func run(cs []Case, log io.Writer) (map[int]outcome, error) {
	groups := map[string]*group{}
	var order []string
	for _, c := range cs {
		g, ok := groups[c.Package]
		if !ok {
			g = &group{pkg: c.Package}
			groups[c.Package] = g
			order = append(order, c.Package)
		}
		g.envtest = g.envtest || c.Envtest
		g.tests = append(g.tests, c.Tests...)
	}
	leaves := map[string]map[string]string{} // package -> leaf test -> last action
	for _, p := range order {
		g := groups[p]
		if g.envtest && os.Getenv("KUBEBUILDER_ASSETS") == "" {
			return nil, fmt.Errorf("%s needs KUBEBUILDER_ASSETS (run through make security-scorecard)", p)
		}
		pattern := "^(" + strings.Join(quoteAll(g.tests), "|") + ")$"
		fmt.Fprintf(log, "securityscorecard: go test %s -run '%s'\n", p, pattern)
		cmd := exec.Command("go", "test", "-json", "-count=1", "-timeout=20m", "-run", pattern, p) // #nosec G204 -- arguments from cases.go
		cmd.Stderr = log
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("go test %s: %w", p, err)
		}
		got, err := parse(stdout)
		if err != nil {
			return nil, fmt.Errorf("go test %s: %w", p, err)
		}
		// A failing test makes go test exit 1; the failures are counted from its events.
		_ = cmd.Wait()
		leaves[p] = got
	}
	results := map[int]outcome{}
	for i, c := range cs {
		var o outcome
		for test, action := range leaves[c.Package] {
			top, _, _ := strings.Cut(test, "/")
			if !contains(c.Tests, top) {
				continue
			}
			switch action {
			case "pass":
				o.Passed++
			case "skip":
				o.Skipped++
			default:
				o.Failed++
			}
		}
		results[i] = o
	}
	return results, nil
}

// parse reads test2json events and returns each leaf test (one with no subtests) with its final
// action; a test that started and never finished (a crash, a timeout) counts as failed.
func parse(r io.Reader) (map[string]string, error) {
	final := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Test == "" {
			continue
		}
		switch e.Action {
		case "run":
			if _, ok := final[e.Test]; !ok {
				final[e.Test] = "unfinished"
			}
		case "pass", "fail", "skip":
			final[e.Test] = e.Action
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	leaves := map[string]string{}
	for test, action := range final {
		leaf := true
		for other := range final {
			if strings.HasPrefix(other, test+"/") {
				leaf = false
				break
			}
		}
		if leaf {
			leaves[test] = action
		}
	}
	return leaves, nil
}

// write prints the scorecard and says whether anything failed, was skipped, or tried nothing.
func write(w io.Writer, cs []Case, results map[int]outcome) (bad bool) {
	classes := []Class{Crash, Leak, Bypass, Deputy, Starvation, TwoLeaders}
	fmt.Fprintln(w, "| Class | Hostile inputs tried | Tests | Findings (failed) | Skipped |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	var total outcome
	totalTests := 0
	for _, class := range classes {
		var sum outcome
		tests := 0
		for i, c := range cs {
			if c.Class != class {
				continue
			}
			o := results[i]
			sum.Passed += o.Passed
			sum.Failed += o.Failed
			sum.Skipped += o.Skipped
			tests += len(c.Tests)
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d |\n", class, sum.inputs(), tests, sum.Failed, sum.Skipped)
		total.Passed += sum.Passed
		total.Failed += sum.Failed
		total.Skipped += sum.Skipped
		totalTests += tests
	}
	fmt.Fprintf(w, "| **all** | **%d** | **%d** | **%d** | **%d** |\n", total.inputs(), totalTests, total.Failed, total.Skipped)
	var empty []string
	for i, c := range cs {
		if results[i].inputs() == 0 {
			empty = append(empty, c.Package+" "+strings.Join(c.Tests, ","))
		}
	}
	sort.Strings(empty)
	for _, e := range empty {
		fmt.Fprintf(w, "\nno test ran for %s\n", e)
	}
	return total.Failed > 0 || total.Skipped > 0 || len(empty) > 0
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = regexp.QuoteMeta(n)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
