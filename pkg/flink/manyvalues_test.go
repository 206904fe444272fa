package flink

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestManyMapEntriesAreRefusedBeforeDecoding: a reply under the size cap whose one object has
// a million members (failure labels, decoded into a map) would cost a hundred times its size.
func TestManyMapEntriesAreRefusedBeforeDecoding(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"exceptionHistory":{"entries":[{"exceptionName":"E","timestamp":1,"failureLabels":{`)
	for i := 0; b.Len() < 8<<20-64; i++ {
		fmt.Fprintf(&b, `"%x":"",`, i)
	}
	b.WriteString(`"z":""}}]}}`)
	body := b.Bytes()
	c := fakeFlink(t, "1.20.3", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) })
	var err error
	alloc := heapDuring(func() { _, err = c.JobExceptions(context.Background(), testJob, 10) })
	t.Logf("allocated %d MiB for %d bytes", alloc>>20, len(body))
	require.Error(t, err)
	assert.Equal(t, KindMalformed, KindOf(err), "%v", err)
	assert.Less(t, alloc, uint64(64<<20), "allocated %d MiB for one reply", alloc>>20)
}
