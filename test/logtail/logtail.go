// Package logtail gives the last lines of a log, which tests print when something they started
// failed: the end of a log is where a process says why it stopped.
package logtail

import (
	"os"
	"strings"
)

// Lines returns the last n lines of s, without trailing blank lines.
func Lines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// File returns the last n lines of the file at path, or why it cannot be read.
func File(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return Lines(string(b), n)
}
