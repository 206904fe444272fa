// Package monitoring reads the monitoring the operator ships (config/prometheus rules,
// config/grafana dashboard), lists the metric names their PromQL expressions use, and runs
// promtool on the rules, so tests can hold them to what the operator exposes.
package monitoring

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
)

// Words that look like metric names in PromQL but are not.
var (
	aggregations = set("sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
		"bottomk", "topk", "quantile", "limitk", "limit_ratio")
	keywords = set("and", "or", "unless", "bool", "offset", "inf", "nan")
	// A parenthesised list of label names follows these.
	labelLists = set("by", "without", "on", "ignoring", "group_left", "group_right")
)

func set(words ...string) map[string]bool {
	m := map[string]bool{}
	for _, w := range words {
		m[w] = true
	}
	return m
}

// MetricNames returns the metric names a PromQL expression selects, sorted and without
// duplicates. It knows PromQL's lexical structure (strings, label matchers, ranges, grouping
// lists, functions, aggregations, numbers and durations) and Grafana's $variables, which is all
// a name needs; promtool checks the syntax itself.
func MetricNames(expr string) ([]string, error) {
	s, err := stripEnclosed(expr)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", expr, err)
	}
	names := map[string]bool{}
	r := []rune(s)
	for i := 0; i < len(r); {
		c := r[i]
		switch {
		case c == '$': // Grafana variable: $name or ${name}
			i++
			for i < len(r) && (isIdent(r[i]) || r[i] == '{' || r[i] == '}') {
				i++
			}
		case unicode.IsDigit(c) || (c == '.' && i+1 < len(r) && unicode.IsDigit(r[i+1])):
			for i < len(r) && (isIdent(r[i]) || r[i] == '.') { // 1e3, 5m, 1h30m, 0x1F
				i++
			}
		case isIdentStart(c):
			start := i
			for i < len(r) && isIdent(r[i]) {
				i++
			}
			word := string(r[start:i])
			next := i
			for next < len(r) && unicode.IsSpace(r[next]) {
				next++
			}
			switch {
			case labelLists[strings.ToLower(word)]:
				if next < len(r) && r[next] == '(' {
					end := strings.IndexRune(string(r[next:]), ')')
					if end < 0 {
						return nil, fmt.Errorf("%q: unclosed label list after %s", expr, word)
					}
					i = next + len([]rune(string(r[next:])[:end])) + 1
				}
			case next < len(r) && r[next] == '(': // a function call
			case aggregations[strings.ToLower(word)] || keywords[strings.ToLower(word)]:
			default:
				names[word] = true
			}
		default:
			i++
		}
	}
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// stripEnclosed removes string literals, label matchers {…} and ranges […] (which hold no
// metric names), checking that they are closed.
func stripEnclosed(expr string) (string, error) {
	var b strings.Builder
	var quote rune
	depth := map[rune]int{}
	closing := map[rune]rune{'}': '{', ']': '['}
	escaped := false
	for _, c := range expr {
		switch {
		case quote != 0:
			if escaped {
				escaped = false
			} else if c == '\\' && quote != '`' {
				escaped = true
			} else if c == quote {
				quote = 0
			}
			continue
		case c == '"' || c == '\'' || c == '`':
			quote = c
			continue
		case c == '{' || c == '[':
			depth[c]++
			continue
		case c == '}' || c == ']':
			if depth[closing[c]] == 0 {
				return "", fmt.Errorf("unbalanced %c", c)
			}
			depth[closing[c]]--
			b.WriteRune(' ')
			continue
		}
		if depth['{'] == 0 && depth['['] == 0 {
			b.WriteRune(c)
		}
	}
	if quote != 0 || depth['{'] != 0 || depth['['] != 0 {
		return "", fmt.Errorf("unclosed string, matcher or range")
	}
	return b.String(), nil
}

func isIdentStart(c rune) bool { return c == '_' || c == ':' || unicode.IsLetter(c) }
func isIdent(c rune) bool      { return isIdentStart(c) || unicode.IsDigit(c) }
