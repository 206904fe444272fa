package controllers

import (
	"context"
	"maps"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/metrics"
)

// applyAutoscaler is the FlinkDeployment's applyAutoscaler for a session job: the options are
// the session's configuration with the job's own on top, and the overrides go into the job's
// in-memory configuration, which its submission carries. A new decision is applied as an
// upgrade of the job with its upgrade mode.
func (r *FlinkSessionJobReconciler) applyAutoscaler(ctx context.Context, s *jobScope, desired *flinkv1beta1.FlinkSessionJobSpec) error {
	if s.deployed == nil || desired.Job == nil {
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
	deployedConf, _ := s.deployed.FlinkConfiguration.Flatten()
	reset := desired.Job.AutoscalerResetNonce != nil &&
		(s.deployed.Job == nil || !equalNonce(s.deployed.Job.AutoscalerResetNonce, desired.Job.AutoscalerResetNonce))
	in := autoscaleInput{
		owner: s.job, kind: metrics.KindSessionJob, conf: conf,
		deployedOverrides: deployedConf[keyParallelismOverrides],
		reset:             reset,
		evaluate: s.flink != nil && st.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed &&
			st.JobStatus.State == flinkv1beta1.JobStatusRunning && st.JobStatus.JobID != "",
		jobID:    st.JobStatus.JobID,
		jobStart: epochMillis(st.JobStatus.StartTime),
		rest:     func(context.Context) (*flink.Client, error) { return s.flink, nil },
	}
	out, err := r.Autoscaling.autoscale(ctx, r.Client, r.Recorder, in)
	if err != nil {
		return err
	}
	if out.overrides != "" {
		own[keyParallelismOverrides] = out.overrides
		desired.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(own)
	}
	if reset {
		spec := s.deployed.DeepCopy()
		n := *desired.Job.AutoscalerResetNonce
		spec.Job.AutoscalerResetNonce = &n
		raw, err := flinkv1beta1.EncodeReconciledSpec(*spec, false)
		if err != nil {
			return err
		}
		st.ReconciliationStatus.LastReconciledSpec = raw
		s.deployed = spec
	}
	return nil
}
