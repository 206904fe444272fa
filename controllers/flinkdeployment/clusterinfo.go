package flinkdeployment

import (
	"context"
	"math"
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/log"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
)

// Keys of status.clusterInfo besides flink-version and flink-revision, as upstream writes them
// (dashboards read them by name).
const (
	ClusterInfoTotalCPU    = "total-cpu"
	ClusterInfoTotalMemory = "total-memory"
	ClusterInfoStateSize   = "state-size"
)

// observeJobDetails records the job's name and start time (epoch milliseconds as a string, as
// upstream writes it) and refreshes clusterInfo. It runs when the job's state changes or its
// start time is not known yet, not at every observe: a running job costs one REST call per
// observe, and name and start time only change with the job.
func (r *FlinkDeploymentReconciler) observeJobDetails(ctx context.Context, s *scope, cl *flink.Client, conf flinkconf.Config) {
	st := s.status()
	details, err := cl.JobDetails(ctx, st.JobStatus.JobID)
	if err != nil {
		log.FromContext(ctx).V(1).Info("job details not read", "job", st.JobStatus.JobID, "reason", err.Error())
		return
	}
	st.JobStatus.JobName = details.Name
	if details.StartTime > 0 {
		st.JobStatus.StartTime = strconv.FormatInt(details.StartTime, 10)
	}
	r.observeClusterInfo(ctx, s, cl, conf)
}

// observeClusterInfo fills clusterInfo's total-cpu and total-memory (the JobManagers' and the
// registered TaskManagers' cpu and process memory, as upstream's getClusterInfo) and the job's
// state-size (its latest completed checkpoint's size). A value that cannot be read is left as
// it was: clusterInfo is informative, never a reason to fail the observe.
func (r *FlinkDeploymentReconciler) observeClusterInfo(ctx context.Context, s *scope, cl *flink.Client, conf flinkconf.Config) {
	st := s.status()
	if st.ClusterInfo == nil {
		st.ClusterInfo = map[string]string{}
	}
	if overview, err := cl.Overview(ctx); err == nil {
		cpu, memory, memoryKnown := clusterResources(conf, overview.TaskManagers)
		st.ClusterInfo[ClusterInfoTotalCPU] = cpu
		if memoryKnown {
			st.ClusterInfo[ClusterInfoTotalMemory] = memory
		}
	}
	if s.Deployed == nil || s.Deployed.Job == nil || st.JobStatus.JobID == "" {
		return
	}
	if stats, err := cl.CheckpointStatistics(ctx, st.JobStatus.JobID); err == nil && stats.Latest.Completed != nil {
		st.ClusterInfo[ClusterInfoStateSize] = strconv.FormatInt(stats.Latest.Completed.StateSize, 10)
	}
}

// clusterResources is the cluster's total cpu (formatted as upstream's Java double) and total
// process memory in bytes, with taskManagers TaskManagers registered. Flink's defaults apply:
// one JobManager of 1 cpu, a TaskManager's cpu is its slot count. The memory is unknown
// (false) when a process size is not set, as Flink then derives it from other sizes.
func clusterResources(conf flinkconf.Config, taskManagers int) (cpu, memory string, memoryKnown bool) {
	jmReplicas, err := conf.Int("kubernetes.jobmanager.replicas", 1)
	if err != nil {
		jmReplicas = 1
	}
	jmCPU := floatOption(conf, "kubernetes.jobmanager.cpu.amount", 1)
	tmCPU := floatOption(conf, "kubernetes.taskmanager.cpu.amount", -1)
	if tmCPU <= 0 {
		slots, err := flinkconf.TaskSlots(conf)
		if err != nil {
			slots = 1
		}
		tmCPU = float64(slots)
	}
	cpu = javaDouble(jmCPU*float64(jmReplicas) + tmCPU*float64(taskManagers))
	jmMemory, jmErr := flinkconf.MemoryBytes(conf.Get("jobmanager.memory.process.size", ""))
	tmMemory, tmErr := flinkconf.MemoryBytes(conf.Get("taskmanager.memory.process.size", ""))
	if jmErr != nil || tmErr != nil {
		return cpu, "", false
	}
	return cpu, strconv.FormatInt(jmMemory*int64(jmReplicas)+tmMemory*int64(taskManagers), 10), true
}

func floatOption(conf flinkconf.Config, key string, def float64) float64 {
	f, err := strconv.ParseFloat(strings.TrimSpace(conf.Get(key, "")), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return def
	}
	return f
}

// javaDouble renders f as Java's Double.toString does for the values a cluster's cpu takes
// ("1.0", "0.5", "2.25"): upstream writes total-cpu that way and scripts compare the strings.
func javaDouble(f float64) string {
	if f != 0 && (math.Abs(f) >= 1e7 || math.Abs(f) < 1e-3) {
		mantissa, exp, _ := strings.Cut(strconv.FormatFloat(f, 'E', -1, 64), "E")
		if !strings.Contains(mantissa, ".") {
			mantissa += ".0"
		}
		e, _ := strconv.Atoi(exp)
		return mantissa + "E" + strconv.Itoa(e)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// jobDetailsDue: the job's name and start time are read again when its state changed or its
// start time is not known.
func jobDetailsDue(st *flinkv1beta1.FlinkDeploymentStatus, prev flinkv1beta1.JobStatusState) bool {
	return st.JobStatus.State != prev || st.JobStatus.StartTime == ""
}
