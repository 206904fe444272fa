package autoscaler

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// Limits bound what decoding one autoscaler-<name> ConfigMap may cost. The ConfigMap is
// writable by whoever may edit ConfigMaps in the resource's namespace, so its content is
// untrusted input to a process shared by every tenant: a few kilobytes of gzip can expand to
// many megabytes, and a YAML parser spends a few hundred bytes of heap per node. Every entry is
// held to these bounds before it is parsed; an entry beyond them is refused with an error naming
// it (the rest of the state is still read).
type Limits struct {
	// MaxEntryBytes bounds one entry's text after base64 and gzip are undone.
	MaxEntryBytes int
	// MaxEntryNodes bounds one entry's YAML nodes (scalars, maps and lists): the number of
	// samples, vertices, metrics and records it can hold, counted before parsing.
	MaxEntryNodes int
}

// Default budget. The ConfigMap holds at most maxStateBytes of compressed entries (Encode trims
// to it, as upstream does); what upstream writes within that is a few MiB of YAML with fewer than
// a few hundred thousand nodes. The defaults admit every state Encode writes (it trims to them
// too) and keep a refused or admitted entry to a few tens of MiB of heap.
const (
	DefaultMaxEntryBytes = 4 << 20
	DefaultMaxEntryNodes = 120000
)

// DefaultLimits is the budget used when the operator chooses none.
func DefaultLimits() Limits {
	return Limits{MaxEntryBytes: DefaultMaxEntryBytes, MaxEntryNodes: DefaultMaxEntryNodes}
}

// orDefault fills unset (zero or negative) bounds with the defaults.
func (l Limits) orDefault() Limits {
	d := DefaultLimits()
	if l.MaxEntryBytes <= 0 {
		l.MaxEntryBytes = d.MaxEntryBytes
	}
	if l.MaxEntryNodes <= 0 {
		l.MaxEntryNodes = d.MaxEntryNodes
	}
	return l
}

// errOverBudget marks an entry refused for its size, as opposed to one that is malformed.
var errOverBudget = errors.New("over the autoscaler state budget")

// ctxCheckEvery is how many loop iterations pass between checks of the reconcile's context.
const ctxCheckEvery = 256

// decompressBounded undoes upstream's gzip+base64 within the byte budget, falling back to the
// text itself for entries written before upstream compressed them. Decompression stops one byte
// past the budget, so a small value that would expand without end costs at most the budget.
func decompressBounded(s string, l Limits) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return checkSize(s, l)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return checkSize(s, l)
	}
	out, err := io.ReadAll(io.LimitReader(zr, int64(l.MaxEntryBytes)+1))
	if len(out) > l.MaxEntryBytes {
		return "", fmt.Errorf("%w: decompresses to more than %d bytes", errOverBudget, l.MaxEntryBytes)
	}
	if err != nil {
		return "", fmt.Errorf("gzip: %w", err)
	}
	return string(out), nil
}

func checkSize(s string, l Limits) (string, error) {
	if len(s) > l.MaxEntryBytes {
		return "", fmt.Errorf("%w: %d bytes, more than %d", errOverBudget, len(s), l.MaxEntryBytes)
	}
	return s, nil
}

// decompress is decompressBounded with the default budget, for tests and callers that only read
// this package's own output.
func decompress(s string) string {
	out, err := decompressBounded(s, DefaultLimits())
	if err != nil {
		return s
	}
	return out
}

// Nesting bounds checked before parsing: upstream's shapes nest at most five levels, indented by
// two spaces each. A YAML parser's cost grows faster than linearly with nesting, so deeper text is
// refused without parsing it.
const (
	maxFlowDepth    = 16
	maxIndent       = 128
	maxDashesInLine = 16
)

// scanYAML returns an upper bound of the YAML nodes text can produce, computed without parsing,
// or an error when the text nests deeper than upstream's shapes ever do. Outside quoted scalars a
// node needs an indicator or a line of its own: a flow separator or opening bracket (a key and a
// value each), a line break, ':' or '?' (a key and a value), or a '-' (a sequence, possibly
// nested on one line). Quoted scalars and comments add nothing.
func scanYAML(text string) (int, error) {
	n := 2
	var quote byte
	flow, indent, dashes, lineStart, line := 0, 0, 0, true, 1
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == '\n' {
			n += 2 // inside a quoted scalar too: counting lines stays an upper bound
			indent, dashes, lineStart = 0, 0, true
			line++
			continue
		}
		if lineStart {
			if c == ' ' {
				if indent++; indent > maxIndent {
					return 0, fmt.Errorf("line %d: indented more than %d columns", line, maxIndent)
				}
				continue
			}
			lineStart = false
		}
		if quote != 0 {
			switch {
			case c == '\\' && quote == '"':
				i++
			case c == quote:
				quote = 0
			}
			continue
		}
		switch c {
		case '"', '\'':
			quote = c
		case '[', '{':
			if flow++; flow > maxFlowDepth {
				return 0, fmt.Errorf("line %d: flow collections nested deeper than %d", line, maxFlowDepth)
			}
			n += 2
		case ']', '}':
			flow--
		case ',', ':', '?':
			n += 2
		case '-':
			if dashes++; dashes > maxDashesInLine {
				return 0, fmt.Errorf("line %d: more than %d '-' in one line", line, maxDashesInLine)
			}
			n++
		case '#':
			for i+1 < len(text) && text[i+1] != '\n' {
				i++
			}
		}
	}
	return n, nil
}

// parseBounded parses one entry's YAML within the node budget into a tree, and refuses anchors
// and aliases (Jackson never writes them for upstream's classes, and their expansion is the one
// way a small tree decodes into a large value).
func parseBounded(ctx context.Context, text string, l Limits) (*yaml.Node, error) {
	n, err := scanYAML(text)
	if err != nil {
		return nil, err
	}
	if n > l.MaxEntryNodes {
		return nil, fmt.Errorf("%w: up to %d YAML nodes, more than %d", errOverBudget, n, l.MaxEntryNodes)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return nil, err
	}
	seen := 0
	var walk func(*yaml.Node) error
	walk = func(n *yaml.Node) error {
		if seen++; seen%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if n.Kind == yaml.AliasNode || n.Anchor != "" {
			return fmt.Errorf("line %d: YAML anchors and aliases are not allowed", n.Line)
		}
		for _, c := range n.Content {
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(&doc); err != nil {
		return nil, err
	}
	return &doc, nil
}

// tick returns the context's error every ctxCheckEvery calls, so that loops over a state's
// entries stop when the reconcile's deadline passes.
type tick struct {
	ctx context.Context
	n   int
}

func (t *tick) err() error {
	t.n++
	if t.n%ctxCheckEvery != 0 {
		return nil
	}
	return t.ctx.Err()
}
