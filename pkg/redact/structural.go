package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// URL user info: the scheme, then everything up to the last "@" before the host's end. A
// password may hold ":" and "@" (escaped or not), never "/", "?", "#", blanks or quotes, which
// end the authority (or the quoted text around it).
var userInfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://)([^/?#@\s"'<>\\]*(?:@[^/?#@\s"'<>\\]*)*)@`)

// URLUserInfo masks the password of every URL in s ("https://user:******@host/..."), as
// url.URL.Redacted does for one parsed URL: the user name stays, to say whose credentials were
// used. Text without "://" is returned as it is.
func URLUserInfo(s string) string {
	if !strings.Contains(s, "://") || !strings.Contains(s, "@") {
		return s
	}
	return userInfo.ReplaceAllStringFunc(s, func(m string) string {
		sub := userInfo.FindStringSubmatch(m)
		scheme, info := sub[1], sub[2]
		user, _, hasPassword := strings.Cut(info, ":")
		if !hasPassword {
			return m // no password; a lone user name is not masked (url.URL.Redacted keeps it too)
		}
		return scheme + user + ":" + Mask + "@"
	})
}

// URLPasswords are the passwords in the user info of the given URLs, for New: a URL that
// url.Parse reads differently from URLUserInfo (a password with "/" in it) is still masked
// wherever a message quotes it.
func URLPasswords(uris ...string) []string {
	var out []string
	for _, u := range uris {
		_, rest, ok := strings.Cut(u, "://")
		if !ok {
			continue
		}
		at := strings.LastIndex(rest, "@")
		if at < 0 {
			continue
		}
		if _, pw, ok := strings.Cut(rest[:at], ":"); ok && pw != "" {
			out = append(out, pw)
		}
	}
	return out
}

// maxEmbedded bounds how deep JSON documents held in strings are followed (a recorded spec in
// a status, kubectl's last-applied-configuration annotation): real documents nest one level.
const maxEmbedded = 4

// JSON masks the secrets of a Flink resource, or any part of one, in a JSON document by their
// place in it, never by their text, so that a secret value that happens to equal a field name
// or to contain JSON syntax changes nothing but itself, and the result always parses:
//   - under a "flinkConfiguration" object, the values of keys (flattened with ".") that
//     IsSecretKey marks;
//   - under an "env" list, every variable's value (pod templates hand secrets to Flink this way);
//   - in every string, the password of a URL's user info (a jarURI's);
//   - a string that holds a JSON object (a recorded spec, last-applied-configuration) is
//     decoded, masked by these rules and encoded again.
//
// patterns are IsSecretKey's (DefaultKeyPatterns when nil).
func JSON(doc []byte, patterns []string) ([]byte, error) {
	v, err := decodeJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("mask secrets: %w", err)
	}
	m := masker{patterns: patterns}
	v, changed := m.walk(v, 0)
	if !changed {
		return doc, nil
	}
	return encodeJSON(v)
}

// MarshalJSON is json.Marshal of v, masked by JSON.
func MarshalJSON(v any, patterns []string) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return JSON(raw, patterns)
}

func decodeJSON(doc []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber() // numbers stay as they were written
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("text after the JSON value")
	}
	return v, nil
}

func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep text as it was: <, > and & are not escaped
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

type masker struct{ patterns []string }

// walk returns v masked and whether anything changed (maps and slices are changed in place).
func (m masker) walk(v any, depth int) (any, bool) {
	changed := false
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			var ch bool
			switch sub, isMap := c.(map[string]any); {
			case k == "flinkConfiguration" && isMap:
				ch = m.conf(sub, "", depth)
			case k == "env":
				ch = m.env(c, depth)
			default:
				t[k], ch = m.walk(c, depth)
			}
			changed = changed || ch
		}
	case []any:
		for i, c := range t {
			var ch bool
			t[i], ch = m.walk(c, depth)
			changed = changed || ch
		}
	case string:
		s := m.str(t, depth)
		return s, s != t
	}
	return v, changed
}

// conf masks a (possibly nested) Flink configuration; prefix is the flattened key so far.
func (m masker) conf(node map[string]any, prefix string, depth int) bool {
	changed := false
	for k, c := range node {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		var ch bool
		switch sub, isMap := c.(map[string]any); {
		case isMap:
			ch = m.conf(sub, key, depth)
		case c == nil:
		case IsSecretKey(key, m.patterns):
			if c != Mask {
				node[k], ch = Mask, true
			}
		default:
			node[k], ch = m.walk(c, depth)
		}
		changed = changed || ch
	}
	return changed
}

// env masks the values of a container's environment variables (name/value objects); anything
// else under an "env" key is walked as usual.
func (m masker) env(v any, depth int) bool {
	list, ok := v.([]any)
	if !ok {
		_, ch := m.walk(v, depth)
		return ch
	}
	changed := false
	for _, item := range list {
		obj, ok := item.(map[string]any)
		if !ok {
			continue
		}
		for k, c := range obj {
			var ch bool
			if val, isString := c.(string); k == "value" && isString {
				if val != "" && val != Mask {
					obj[k], ch = Mask, true
				}
			} else {
				obj[k], ch = m.walk(c, depth)
			}
			changed = changed || ch
		}
	}
	return changed
}

// str masks URL passwords in s, or the document s holds.
func (m masker) str(s string, depth int) string {
	trimmed := strings.TrimSpace(s)
	if depth < maxEmbedded && strings.HasPrefix(trimmed, "{") && strings.HasSuffix(trimmed, "}") {
		if inner, err := decodeJSON([]byte(trimmed)); err == nil {
			masked, changed := m.walk(inner, depth+1)
			if !changed {
				return s
			}
			if out, err := encodeJSON(masked); err == nil {
				return string(out)
			}
		}
	}
	return URLUserInfo(s)
}
