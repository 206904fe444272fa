package upstreame2e

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClaimGivesEachScriptToOneRunner: runners racing through the same list each get a share,
// and every script is run exactly once.
func TestClaimGivesEachScriptToOneRunner(t *testing.T) {
	queue := t.TempDir()
	names := []string{"a.sh", "b.sh", "c.sh", "d.sh", "e.sh", "f.sh", "g.sh", "h.sh"}
	const runners = 4
	claims := make([][]string, runners)
	var wg sync.WaitGroup
	for r := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, n := range names {
				mine, err := Claim(queue, n)
				assert.NoError(t, err)
				if mine {
					claims[r] = append(claims[r], n)
				}
			}
		}()
	}
	wg.Wait()
	count := map[string]int{}
	for _, c := range claims {
		for _, n := range c {
			count[n]++
		}
	}
	for _, n := range names {
		assert.Equal(t, 1, count[n], "runners that claimed %s", n)
	}
}

// TestClaimFailsOnAMissingQueue: a queue that does not exist is an error, not a script nobody runs.
func TestClaimFailsOnAMissingQueue(t *testing.T) {
	queue := filepath.Join(t.TempDir(), "absent")
	_, err := Claim(queue, "a.sh")
	require.Error(t, err)
	_, statErr := os.Stat(queue)
	require.True(t, os.IsNotExist(statErr))
}
