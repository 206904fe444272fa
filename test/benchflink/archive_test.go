package benchflink

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// archiveOf builds a JobManager archive as Flink writes it: each REST answer is a JSON string.
func archiveOf(t *testing.T, jobID string, details, checkpoints string) []byte {
	t.Helper()
	data, err := json.Marshal(map[string]any{"archive": []map[string]string{
		{"path": "/jobs/overview", "json": `{"jobs":[]}`},
		{"path": "/jobs/" + jobID, "json": details},
		{"path": "/jobs/" + jobID + "/checkpoints", "json": checkpoints},
	}})
	require.NoError(t, err)
	return data
}

func TestParseArchiveStopWithSavepointIsTriggerToLastAck(t *testing.T) {
	data := archiveOf(t, "j1",
		`{"jid":"j1","state":"FINISHED","timestamps":{"RUNNING":900,"FINISHED":1400,"CANCELED":0}}`,
		`{"latest":{"savepoint":{"id":3,"external_path":"file:/sp/savepoint-1","trigger_timestamp":1000,"latest_ack_timestamp":1300}}}`)
	got, err := parseArchive(data, "j1")
	require.NoError(t, err)
	require.Equal(t, "file:/sp/savepoint-1", got.savepoint.ExternalPath)
	require.Equal(t, 300*time.Millisecond, got.flink, "trigger to the last acknowledgement, as the log would say")
}

func TestParseArchiveCancel(t *testing.T) {
	data := archiveOf(t, "j1",
		`{"jid":"j1","state":"CANCELED","timestamps":{"CANCELLING":2000,"CANCELED":2250}}`,
		`{"latest":{"savepoint":null}}`)
	got, err := parseArchive(data, "j1")
	require.NoError(t, err)
	require.Nil(t, got.savepoint)
	require.Equal(t, 250*time.Millisecond, got.flink)
}

func TestParseArchiveRefusesWhatIsNoStop(t *testing.T) {
	_, err := parseArchive(archiveOf(t, "j1", `{"jid":"j1","state":"FAILED","timestamps":{}}`, `{"latest":{}}`), "j1")
	require.ErrorContains(t, err, "FAILED")
	_, err = parseArchive([]byte(`{"archive":[{"path":"/jobs/j1","json":"{\"state\":"`), "j1")
	require.Error(t, err, "a file still being written")
	_, err = parseArchive(archiveOf(t, "other", `{}`, `{}`), "j1")
	require.ErrorContains(t, err, "no job details")
}

func TestLoggedStopReadsTheSavepointAfterTheChange(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "node", "pods", "ns_jm-1_0123abcd", "logs")
	require.NoError(t, os.MkdirAll(logs, 0o755))
	const prefix = "2026-11-28 17:21:07,312 INFO  org.apache.flink.runtime.checkpoint.CheckpointCoordinator    [] - "
	log := strings.Join([]string{
		prefix + "Triggering checkpoint 2 (type=SavepointType{name='Savepoint', postCheckpointAction=NONE, formatType=CANONICAL}) @ 500 for job j1.",
		prefix + "Completed checkpoint 2 for job j1 (4000 bytes, checkpointDuration=50 ms, finalizationTime=1 ms).",
		prefix + "Triggering checkpoint 3 (type=SavepointType{name='Suspend Savepoint', postCheckpointAction=SUSPEND, formatType=CANONICAL}) @ 2000 for job j1.",
		prefix + "Completed checkpoint 3 for job j1 (4863 bytes, checkpointDuration=117 ms, finalizationTime=1 ms).",
	}, "\n")
	require.NoError(t, os.WriteFile(filepath.Join(logs, "flink-main-container.log"), []byte(log), 0o644))
	jm := &jobManager{namespace: "ns", name: "jm-1"}
	got, err := loggedStop(dir, jm, "j1", time.UnixMilli(1000))
	require.NoError(t, err)
	require.Equal(t, int64(3), got.savepoint.ID, "the savepoint triggered after the change, not the earlier one")
	require.Equal(t, 117*time.Millisecond, got.flink)
	_, err = loggedStop(dir, jm, "j1", time.UnixMilli(3000))
	require.Error(t, err, "no savepoint after the change")
}

func TestStartTicksSkipsTheCommandName(t *testing.T) {
	// Field 22 (starttime) is 12345; the name holds a space and a parenthesis.
	stat := "4242 (java (main) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 30 0 12345 1000 200"
	got, err := startTicks(stat)
	require.NoError(t, err)
	require.Equal(t, int64(12345), got)
	_, err = startTicks("4242 (java) S 1 2")
	require.Error(t, err)
}

func TestMedianOfEachColumn(t *testing.T) {
	samples := []Sample{newSample(4*time.Second, 0, time.Second), newSample(2*time.Second, 0, 2*time.Second),
		newSample(10*time.Second, time.Second, time.Second)}
	require.Equal(t, Seconds(4*time.Second), median(samples, func(s Sample) Seconds { return s.Total }))
	require.Equal(t, Seconds(2*time.Second), median(samples, func(s Sample) Seconds { return s.Flink }))
	// Overheads 3, 0 and 8: the median is 3, not the difference of the other medians (2).
	require.Equal(t, Seconds(3*time.Second), median(samples, func(s Sample) Seconds { return s.Overhead }))
	require.Equal(t, Seconds(3*time.Second), median(samples[:2], func(s Sample) Seconds { return s.Total }))
}
