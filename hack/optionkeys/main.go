// Command optionkeys is the lint rule of the options registry (run by make lint): no product
// Go file outside pkg/options may hold a string literal that starts with an option key prefix,
// "kubernetes.operator." or "job.autoscaler.". Every option is declared once in pkg/options,
// with its key, default and meaning, and read from there; a key spelled a second time drifts
// (the two copies parse or default differently) and escapes the configuration reference and
// admission's type check. forbidigo matches identifiers, not literals, hence this check.
//
// Test code (_test.go, test/, hack/) may spell keys: a test about the user-facing spelling of
// an option writes it out. pkg/upstreamoptions lists upstream's option names after the
// registry's prefix constant, so it needs no exemption.
//
// Usage: go run ./hack/optionkeys [dir] (default "."); exit status 1 on a finding.
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"

	"github.com/flink-operator/flink-operator/hack/internal/golint"
)

// prefixes are the option key prefixes only pkg/options spells.
var prefixes = []string{"kubernetes.operator.", "job.autoscaler."}

// exempt are the directories (slash-separated, relative to the module root) whose Go files
// may spell keys: the registry itself, and test code.
var exempt = []string{"pkg/options", "test", "hack", "bin", "vendor"}

func main() {
	golint.Main("optionkeys", "option key literals outside pkg/options: refer to the registry's option (options.X.Key) or its prefix constants", check)
}

// check lists the literals under root that spell an option key outside the exempt places, as
// file:line:column: text.
func check(root string) ([]string, error) {
	return golint.Files(root, isExempt, func(rel string) bool { return !strings.HasSuffix(rel, "_test.go") }, checkFile)
}

func isExempt(rel string) bool {
	for _, e := range exempt {
		if rel == e {
			return true
		}
	}
	return false
}

// checkFile reports the option key literals of one Go file.
func checkFile(path, rel string) ([]string, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", rel, err)
	}
	var findings []string
	ast.Inspect(file, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			return true
		}
		for _, p := range prefixes {
			if strings.HasPrefix(s, p) {
				pos := fset.Position(lit.Pos())
				findings = append(findings, fmt.Sprintf("%s:%d:%d: option key literal %s: declare the option in pkg/options and use it", rel, pos.Line, pos.Column, lit.Value))
				break
			}
		}
		return true
	})
	return findings, nil
}
