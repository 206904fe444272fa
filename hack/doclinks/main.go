// Command doclinks checks that the documentation's relative links resolve: every link in
// README.md, docs/ and the repository's other Markdown files to a file of the repository names a file or directory that exists, and
// every anchor (#section) names a heading of the page it points at, as GitHub renders it
// (run by make verify). Links to other sites are not followed: the check must not depend on
// the network.
//
// Usage: go run ./hack/doclinks [dir] (default "."); exit status 1 on a broken link.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/flink-operator/flink-operator/hack/internal/golint"
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	broken, err := Check(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "doclinks:", err)
		os.Exit(1)
	}
	for _, b := range broken {
		fmt.Println(b)
	}
	if len(broken) > 0 {
		fmt.Fprintf(os.Stderr, "doclinks: %d broken link(s)\n", len(broken))
		os.Exit(1)
	}
}

// Pages are the Markdown files checked, relative to root, README.md first: every .md file of
// the repository outside hidden directories and bin/ (built tools and downloads).
func Pages(root string) ([]string, error) {
	all, err := golint.Paths(root, func(rel string) bool { return rel == "bin" }, ".md")
	if err != nil {
		return nil, err
	}
	var pages []string
	for _, rel := range all {
		if rel != "README.md" {
			pages = append(pages, rel)
		}
	}
	sort.Strings(pages)
	if _, err := os.Stat(filepath.Join(root, "README.md")); err == nil {
		pages = append([]string{"README.md"}, pages...)
	}
	return pages, nil
}

// Check returns the broken links of the pages under root, as "page:line: link: why".
func Check(root string) ([]string, error) {
	pages, err := Pages(root)
	if err != nil {
		return nil, err
	}
	anchors := map[string]map[string]bool{} // by slash path relative to root
	anchorsOf := func(rel string) (map[string]bool, error) {
		if a, ok := anchors[rel]; ok {
			return a, nil
		}
		text, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, err
		}
		anchors[rel] = Anchors(text)
		return anchors[rel], nil
	}
	var broken []string
	for _, page := range pages {
		text, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(page)))
		if err != nil {
			return nil, err
		}
		for _, l := range Links(text) {
			if why := checkLink(root, page, l.Target, anchorsOf); why != "" {
				broken = append(broken, fmt.Sprintf("%s:%d: %s: %s", page, l.Line, l.Target, why))
			}
		}
	}
	return broken, nil
}

func checkLink(root, page, target string, anchorsOf func(string) (map[string]bool, error)) string {
	if target == "" || strings.HasPrefix(target, "/") || regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`).MatchString(target) {
		return "" // another site, a mail address, or a path of the web site rather than of the repository
	}
	path, anchor, _ := strings.Cut(target, "#")
	rel := page
	if path != "" {
		rel = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), filepath.FromSlash(path))))
		if rel == ".." || strings.HasPrefix(rel, "../") {
			return "points outside the repository"
		}
		info, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return "no such file or directory"
		}
		if info.IsDir() || anchor == "" {
			return ""
		}
	}
	if anchor == "" || !strings.HasSuffix(rel, ".md") {
		return ""
	}
	a, err := anchorsOf(rel)
	if err != nil {
		return err.Error()
	}
	if !a[anchor] {
		return "no heading with anchor #" + anchor + " in " + rel
	}
	return ""
}

// Link is a link target and the line it is on.
type Link struct {
	Line   int
	Target string
}

var (
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	refDef     = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	fence      = regexp.MustCompile("^\\s{0,3}(```|~~~)")
)

// Links are the inline links, images and link reference definitions of a Markdown text,
// outside code blocks and code spans.
func Links(text []byte) []Link {
	var links []Link
	eachLine(text, func(n int, line string) {
		if m := refDef.FindStringSubmatch(line); m != nil {
			links = append(links, Link{n, m[1]})
			return
		}
		for _, m := range inlineLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			links = append(links, Link{n, m[1]})
		}
	})
	return links
}

// eachLine calls f with every line outside fenced code blocks and its number.
func eachLine(text []byte, f func(n int, line string)) {
	s := bufio.NewScanner(bytes.NewReader(text))
	s.Buffer(make([]byte, 1<<20), 1<<20)
	inFence := ""
	for n := 1; s.Scan(); n++ {
		line := s.Text()
		if m := fence.FindStringSubmatch(line); m != nil {
			switch inFence {
			case "":
				inFence = m[1]
			case m[1]:
				inFence = ""
			}
			continue
		}
		if inFence == "" {
			f(n, line)
		}
	}
}

var (
	heading    = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	mdLink     = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// Anchors are the anchors GitHub gives a Markdown text: one per heading (Slug, with -1, -2, …
// appended to repeats) and the names of HTML anchors.
func Anchors(text []byte) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	eachLine(text, func(_ int, line string) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			return
		}
		slug := Slug(m[2])
		if n := seen[slug]; n > 0 {
			anchors[slug+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	})
	return anchors
}

// Slug is the anchor GitHub derives from a heading's text: the text as rendered (link targets,
// code-span backticks and emphasis marks dropped), lowercased, spaces turned into '-', and every
// character other than a letter, a digit, '-' or '_' dropped.
func Slug(headingText string) string {
	text := mdLink.ReplaceAllString(headingText, "$1")
	text = strings.NewReplacer("`", "", "**", "", "__", "").Replace(text)
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
