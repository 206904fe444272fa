package jobs

import (
	"time"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
)

// FlinkCleanupWaitAtMost bounds how long a cluster whose job was just stopped is left to Flink's
// cleanup before it is deleted. A JobManager whose shutdown takes longer than 5 s is halted by
// Flink's shutdown safeguard, so a longer wait could never end sooner than the hang it avoids.
const FlinkCleanupWaitAtMost = 5 * time.Second

// FlinkCleanupWait says how long to leave a cluster whose job ended (the operator's stop
// included) to Flink before deleting it; 0: delete it now. Flink reports a job terminal before
// it has cleaned up after it: the JobMaster stops, the job's checkpoint counter, job graph and
// job-specific HA ConfigMap go, its job result is marked clean. A JobManager sent SIGTERM in the
// middle of that hung until Flink's shutdown safeguard halted it 5 s later (exit code 239;
// make bench-flink, on a busy machine, in savepoint upgrades and suspends). With Kubernetes HA
// the job's ConfigMap (native.JobHAConfigMapName) is deleted at the end of that cleanup: while
// it is there, and for at most FlinkCleanupWaitAtMost after the job was seen terminal, the
// cluster is left alone, and the ConfigMap's deletion wakes the reconciler. Without Kubernetes
// HA there is no such signal and nothing is waited for.
func FlinkCleanupWait(js *flinkv1beta1.JobStatus, kubernetesHA, jobConfigMapExists bool, now time.Time) time.Duration {
	if !kubernetesHA || !jobConfigMapExists || !reconciler.IsTerminal(js.State) {
		return 0
	}
	age, known := stateAge(js, now)
	if !known || age >= FlinkCleanupWaitAtMost {
		return 0
	}
	return FlinkCleanupWaitAtMost - age
}
