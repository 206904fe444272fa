package flinksessionjob

import (
	"context"
	"maps"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/metrics"
)

// applyAutoscaler is the FlinkDeployment's applyAutoscaler for a session job: the options are
// the session's configuration with the job's own on top, and the overrides go into the job's
// in-memory configuration, which its submission carries. A new decision is applied as an
// upgrade of the job with its upgrade mode.
func (r *FlinkSessionJobReconciler) applyAutoscaler(ctx context.Context, s *jobScope, desired *flinkv1beta1.FlinkSessionJobSpec) error {
	if s.Deployed == nil || desired.Job == nil {
		return nil
	}
	own, err := desired.FlinkConfiguration.Flatten()
	if err != nil {
		return err
	}
	conf := maps.Clone(map[string]string(s.conf))
	if conf == nil {
		conf = map[string]string{}
	}
	maps.Copy(conf, own)
	st := s.status()
	deployedConf, _ := s.Deployed.FlinkConfiguration.Flatten()
	reset := desired.Job.AutoscalerResetNonce != nil &&
		(s.Deployed.Job == nil || !jobs.EqualNonce(s.Deployed.Job.AutoscalerResetNonce, desired.Job.AutoscalerResetNonce))
	in := jobs.AutoscaleInput{
		Owner: s.job, Kind: metrics.KindSessionJob, Conf: conf,
		DeployedOverrides: deployedConf[jobs.KeyParallelismOverrides],
		Reset:             reset,
		Evaluate: s.flink != nil && st.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed &&
			st.JobStatus.State == flinkv1beta1.JobStatusRunning && st.JobStatus.JobID != "",
		JobID:    st.JobStatus.JobID,
		JobStart: jobs.EpochMillis(st.JobStatus.StartTime),
		Rest:     func(context.Context) (*flink.Client, error) { return s.flink, nil },
	}
	out, err := r.Autoscaling.Autoscale(ctx, r.Client, r.Recorder, in)
	if err != nil {
		return err
	}
	st.Scaling = out.Scaling(st.Scaling, s.job.Generation)
	if out.Overrides != "" {
		own[jobs.KeyParallelismOverrides] = out.Overrides
		desired.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(own)
	}
	if reset {
		spec := s.Deployed.DeepCopy()
		n := *desired.Job.AutoscalerResetNonce
		spec.Job.AutoscalerResetNonce = &n
		raw, err := flinkv1beta1.EncodeReconciledSpec(*spec, false)
		if err != nil {
			return err
		}
		st.ReconciliationStatus.LastReconciledSpec = raw
		s.Deployed = spec
	}
	return nil
}
