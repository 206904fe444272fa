package benchflink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/native"
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
	//   - stop-with-savepoint: the savepoint's trigger_timestamp to its latest_ack_timestamp
	//     (its end_to_end_duration). The job's tasks end and it turns FINISHED a few tens of
	//     milliseconds later; that tail is left in the overhead, so that the JobManager's log
	//     (loggedStop), which reports the savepoint but not the tail, gives the same number;
	//   - cancel: the job's CANCELLING timestamp to its CANCELED one.
	flink time.Duration
	// source says where it was read: "archive", "log", or "" (no stop of Flink's).
	source string
}

// archiveWait bounds the wait for an archive the JobManager should have written: it writes it
// as the job ends, before the job's cleanup, so well before the operator deletes the
// JobManager; the flows read it later than that.
const archiveWait = 15 * time.Second

// oldJobStop is what Flink did to stop job jobID of JobManager jm, which a change made at t0
// replaced. With required (a stop with a savepoint), it is read from the job's archive or,
// when Flink failed to write it (Flink 1.20.3 now and then fails to archive the checkpoint
// statistics: NullArgumentException in CheckpointingStatisticsHandler), from the JobManager's
// log (loggedStop); otherwise a job that was not archived (it never ended) stopped with no
// time of Flink's.
func (b *bench) oldJobStop(ctx context.Context, jm *jobManager, jobID string, t0 time.Time, required bool) (stopped, error) {
	stop, err := b.archivedStop(ctx, jobID, t0, required)
	if err == nil || !required {
		return stop, err
	}
	logged, logErr := loggedStop(b.env.Dir, jm, jobID, t0)
	if logErr != nil {
		return stopped{}, errors.Join(err, logErr)
	}
	return logged, nil
}

// archivedStop reads the archive of job jobID, stopped by a change made at t0. With required,
// it waits archiveWait for it; otherwise a missing archive is a job that never ended.
func (b *bench) archivedStop(ctx context.Context, jobID string, t0 time.Time, required bool) (stopped, error) {
	path := filepath.Join(archiveDir(b.env.Dir), jobID)
	out := stopped{source: "archive"}
	err := poll(ctx, archiveWait, "the JobManager's archive of job "+jobID, func() (bool, error) {
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) && !required {
			out = stopped{}
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("read archive: %w", err)
		}
		// A file being written does not parse yet.
		parsed, err := parseArchive(data, jobID)
		out.savepoint, out.flink = parsed.savepoint, parsed.flink
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
	out := stopped{savepoint: checkpoints.Latest.Savepoint}
	switch {
	case details.State == flink.JobFinished && out.savepoint != nil:
		out.flink = time.Duration(out.savepoint.LatestAck-out.savepoint.TriggerTimestamp) * time.Millisecond
	case details.State == flink.JobCanceled:
		out.savepoint = nil
		ts := details.Timestamps
		out.flink = time.Duration(ts[flink.JobCanceled]-ts[flink.JobCancelling]) * time.Millisecond
	default:
		return stopped{}, fmt.Errorf("archive of job %s: ended %s, not stopped with a savepoint or cancelled", jobID, details.State)
	}
	return out, nil
}

// The JobManager's log lines about a savepoint (CheckpointCoordinator, INFO): its trigger
// timestamp (ms) and, on completion, its checkpointDuration (latest acknowledgement − trigger).
var (
	savepointTriggered = regexp.MustCompile(`Triggering checkpoint (\d+) \(type=SavepointType\{.*\}\) @ (\d+) for job (\w+)\.`)
	checkpointDone     = regexp.MustCompile(`Completed checkpoint (\d+) for job (\w+) \(\d+ bytes, checkpointDuration=(\d+) ms`)
)

// loggedStop reads the stop-with-savepoint of job jobID, triggered after t0, from the log of
// JobManager jm: the node agent keeps a deleted pod's files under its node directory. The
// numbers are those the archive's checkpoint statistics would have held (trigger timestamp,
// end_to_end_duration); the savepoint's path is not logged, the caller takes it from the
// operator's status.
func loggedStop(envDir string, jm *jobManager, jobID string, t0 time.Time) (stopped, error) {
	logs, err := filepath.Glob(filepath.Join(envDir, "node", "pods", jm.namespace+"_"+jm.name+"_*", "logs", native.MainContainer+".log"))
	if err != nil || len(logs) != 1 {
		return stopped{}, fmt.Errorf("log of JobManager %s: %d files (%v)", jm.name, len(logs), err)
	}
	data, err := os.ReadFile(logs[0])
	if err != nil {
		return stopped{}, fmt.Errorf("log of JobManager %s: %w", jm.name, err)
	}
	var sp *flink.CheckpointRef
	for _, line := range strings.Split(string(data), "\n") {
		if m := savepointTriggered.FindStringSubmatch(line); m != nil && m[3] == jobID {
			id, _ := strconv.ParseInt(m[1], 10, 64)
			at, _ := strconv.ParseInt(m[2], 10, 64)
			if at >= t0.UnixMilli() {
				sp = &flink.CheckpointRef{ID: id, TriggerTimestamp: at, IsSavepoint: true}
			}
		}
		if m := checkpointDone.FindStringSubmatch(line); m != nil && sp != nil && m[1] == strconv.FormatInt(sp.ID, 10) && m[2] == jobID {
			took, _ := strconv.ParseInt(m[3], 10, 64)
			sp.LatestAck = sp.TriggerTimestamp + took
		}
	}
	if sp == nil || sp.LatestAck == 0 {
		return stopped{}, fmt.Errorf("log %s: no completed savepoint of job %s triggered after the change", logs[0], jobID)
	}
	return stopped{savepoint: sp, flink: time.Duration(sp.LatestAck-sp.TriggerTimestamp) * time.Millisecond, source: "log"}, nil
}
