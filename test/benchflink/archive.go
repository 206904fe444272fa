package benchflink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/flink-operator/flink-operator/pkg/flink"
)

// The old job's stop is read from what its JobManager archived, not asked of the JobManager
// while it stops: Flink's REST handlers answer job details and checkpoint statistics from a
// cache that lives web.refresh-interval (3 s), and the operator deletes the JobManager within a
// second of a small job's stop-with-savepoint, so no fresh answer about the savepoint is ever
// seen. With jobmanager.archive.fs.dir set, the JobManager writes, when a job reaches a
// terminal state and before the job's cleanup, the same REST answers (GET /jobs/<id>,
// GET /jobs/<id>/checkpoints, ...) to a file named by the job id: what Flink's HistoryServer
// serves. The setting only adds that write at the job's end; it changes nothing the operator
// sees or waits for.

// archiveConfDir is jobmanager.archive.fs.dir as the JobManager sees it: on the example's state
// volume (mounted at /flink-data from hostPath /tmp/flink).
const archiveConfDir = "file:///flink-data/archive"

// archiveDir is where the node agent keeps that directory on this machine (hostPath volumes
// under its node directory, which localenv puts in the environment's).
func archiveDir(envDir string) string {
	return filepath.Join(envDir, "node", "hostpath", "tmp", "flink", "archive")
}

// stopped is what Flink archived of the old job's stop.
type stopped struct {
	// savepoint is the stop's savepoint, nil when Flink took none.
	savepoint *flink.CheckpointRef
	// flink is how long Flink itself took to stop the job, 0 when it did not (a last-state
	// upgrade with HA deletes the JobManager with the job running; the job then never reaches
	// a terminal state and is not archived). All its timestamps are the JobManager's clock:
	//   - stop-with-savepoint: the savepoint's trigger_timestamp to the job's FINISHED
	//     timestamp. The job finishes after the savepoint's latest_ack_timestamp, once its
	//     tasks have ended, and the stop (what the operator waits for) is complete only then;
	//   - cancel: the job's CANCELLING timestamp to its CANCELED one.
	flink time.Duration
}

// archivedStop reads the archive of job jobID, stopped by a change made at t0. With required, it waits for the archive (the
// JobManager writes it as the job ends, around when the operator deletes it) and fails without
// it; otherwise a job not archived (it never ended) stopped with no time of Flink's.
func (b *bench) archivedStop(ctx context.Context, jobID string, t0 time.Time, required bool) (stopped, error) {
	path := filepath.Join(archiveDir(b.env.Dir), jobID)
	var out stopped
	err := poll(ctx, time.Minute, "the JobManager's archive of job "+jobID, func() (bool, error) {
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) && !required {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("read archive: %w", err)
		}
		// A file being written does not parse yet.
		out, err = parseArchive(data, jobID)
		return err == nil, err
	})
	if err == nil && out.savepoint != nil && out.savepoint.TriggerTimestamp < t0.UnixMilli() {
		return out, fmt.Errorf("job %s: its latest savepoint %s was triggered before the change", jobID, out.savepoint.ExternalPath)
	}
	return out, err
}

// parseArchive reads a job's stop from its archive: {"archive": [{"path": <REST path>,
// "json": <that path's answer>}, ...]}.
func parseArchive(data []byte, jobID string) (stopped, error) {
	var archive struct {
		Archive []struct {
			Path string `json:"path"`
			JSON string `json:"json"`
		} `json:"archive"`
	}
	if err := json.Unmarshal(data, &archive); err != nil {
		return stopped{}, fmt.Errorf("archive of job %s: %w", jobID, err)
	}
	var details *flink.JobDetails
	var checkpoints *flink.CheckpointStatistics
	for _, e := range archive.Archive {
		var err error
		switch e.Path {
		case "/jobs/" + jobID:
			details = &flink.JobDetails{}
			err = json.Unmarshal([]byte(e.JSON), details)
		case "/jobs/" + jobID + "/checkpoints":
			checkpoints = &flink.CheckpointStatistics{}
			err = json.Unmarshal([]byte(e.JSON), checkpoints)
		}
		if err != nil {
			return stopped{}, fmt.Errorf("archive of job %s, %s: %w", jobID, e.Path, err)
		}
	}
	if details == nil || checkpoints == nil {
		return stopped{}, fmt.Errorf("archive of job %s: no job details or checkpoint statistics", jobID)
	}
	ts := details.Timestamps
	out := stopped{savepoint: checkpoints.Latest.Savepoint}
	switch {
	case details.State == flink.JobFinished && out.savepoint != nil:
		out.flink = time.Duration(max(out.savepoint.LatestAck, ts[flink.JobFinished])-out.savepoint.TriggerTimestamp) * time.Millisecond
	case details.State == flink.JobCanceled:
		out.savepoint = nil
		out.flink = time.Duration(ts[flink.JobCanceled]-ts[flink.JobCancelling]) * time.Millisecond
	default:
		return stopped{}, fmt.Errorf("archive of job %s: ended %s, not stopped with a savepoint or cancelled", jobID, details.State)
	}
	return out, nil
}
