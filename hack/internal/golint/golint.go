// Package golint is what the repository's own lint rules (hack/optionkeys, hack/waitidiom)
// share: the walk over a tree's Go files and the command around a rule.
package golint

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Files lists, for every Go file under root that keep accepts, what checkFile finds in it.
// Hidden directories and those skipDir names (slash paths relative to root) are not entered;
// rel is the file's slash path relative to root.
func Files(root string, skipDir, keep func(rel string) bool, checkFile func(path, rel string) ([]string, error)) ([]string, error) {
	paths, err := Paths(root, skipDir, ".go")
	if err != nil {
		return nil, err
	}
	var findings []string
	for _, rel := range paths {
		if !keep(rel) {
			continue
		}
		found, err := checkFile(filepath.Join(root, filepath.FromSlash(rel)), rel)
		findings = append(findings, found...)
		if err != nil {
			return findings, err
		}
	}
	return findings, nil
}

// Paths lists the files under root whose names end in suffix, as slash paths relative to root,
// in lexical order; hidden directories and those skipDir names are not entered.
func Paths(root string, skipDir func(rel string) bool, suffix string) ([]string, error) {
	var paths []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || skipDir(rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, suffix) {
			paths = append(paths, rel)
		}
		return nil
	})
	return paths, err
}

// Main runs the rule name over the directory of the first argument (default "."), prints its
// findings one per line and exits 1 when there are any, with hint on stderr, or 2 when the
// rule could not run.
func Main(name, hint string, check func(root string) ([]string, error)) {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	findings, err := check(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(2)
	}
	for _, f := range findings {
		fmt.Println(f)
	}
	if len(findings) > 0 {
		fmt.Fprintf(os.Stderr, "%s: %d finding(s): %s\n", name, len(findings), hint)
		os.Exit(1)
	}
}
