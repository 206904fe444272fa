// Command waitidiom is the lint rule of the tests' waiting idiom (run by make lint): a test
// waits with test/wait (For, Until, Never), never with testify's Eventually, and a polled
// condition never calls require. A require that fails inside a condition stops the test at
// the first transient error (a conflict, a connection refused while a server restarts) instead
// of polling on, which made tests fail on what they were written to wait out; and Eventually
// beside wait.For meant two idioms with different timeouts, messages and failure output. A
// condition that can fail returns its error to wait.Until, which reports the last one.
//
// Usage: go run ./hack/waitidiom [dir] (default "."); exit status 1 on a finding.
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"

	"github.com/flink-operator/flink-operator/hack/internal/golint"
)

// polls are test/wait's functions whose function-literal arguments are polled.
var polls = map[string]bool{"For": true, "Until": true, "Never": true}

// eventually are testify's polling functions, refused in favour of test/wait.
var eventually = map[string]bool{"Eventually": true, "EventuallyWithT": true, "Eventuallyf": true, "EventuallyWithTf": true, "Never": true, "Neverf": true}

func main() {
	golint.Main("waitidiom", "wait with test/wait, and return a condition's error to wait.Until instead of requiring inside it", check)
}

// check lists the findings of the Go files under root as file:line:column: text.
func check(root string) ([]string, error) {
	return golint.Files(root, func(rel string) bool { return rel == "bin" || rel == "vendor" || rel == "hack/waitidiom" },
		func(string) bool { return true }, checkFile)
}

// checkFile reports one Go file's findings.
func checkFile(path, rel string) ([]string, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", rel, err)
	}
	var findings []string
	report := func(n ast.Node, format string, args ...any) {
		pos := fset.Position(n.Pos())
		findings = append(findings, fmt.Sprintf("%s:%d:%d: %s", rel, pos.Line, pos.Column, fmt.Sprintf(format, args...)))
	}
	ast.Inspect(file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		pkg, name := calledAs(call)
		switch {
		case (pkg == "require" || pkg == "assert") && eventually[name]:
			report(call, "%s.%s: wait with test/wait (For, Until, Never)", pkg, name)
		case pkg == "wait" && polls[name]:
			for _, arg := range call.Args {
				if lit, ok := arg.(*ast.FuncLit); ok {
					ast.Inspect(lit.Body, func(m ast.Node) bool {
						if inner, ok := m.(*ast.CallExpr); ok {
							if p, f := calledAs(inner); p == "require" {
								report(inner, "require.%s inside a condition polled by wait.%s: return the error (wait.Until) or check after the wait", f, name)
							}
						}
						return true
					})
				}
			}
		}
		return true
	})
	return findings, nil
}

// calledAs returns the package name and function of a call written pkg.Func(...).
func calledAs(call *ast.CallExpr) (pkg, name string) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return "", ""
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", ""
	}
	return id.Name, sel.Sel.Name
}
