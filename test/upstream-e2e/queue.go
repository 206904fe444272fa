package upstreame2e

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Claim takes the script named name for the calling runner from the queue, a directory that
// runners started side by side share (UPSTREAM_E2E_QUEUE): each runner goes through the same
// list and runs only the scripts it claims, so a runner that finishes early takes the next
// script instead of idling while another still has several to run. The claim is the creation
// of a directory of that name, which exactly one process can make; it reports whether this
// caller made it.
func Claim(queue, name string) (bool, error) {
	err := os.Mkdir(filepath.Join(queue, name), 0o755)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrExist):
		return false, nil
	default:
		return false, fmt.Errorf("claim %s in the runners' queue: %w", name, err)
	}
}
