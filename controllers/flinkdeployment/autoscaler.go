package flinkdeployment

import (
	"context"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/metrics"
)

// applyAutoscaler runs the job autoscaler of an application deployment before the spec is
// compared with what runs (upstream's applyAutoscaler): the autoscaler's parallelism overrides
// are put into desired, the in-memory spec of this reconcile, never into the resource. A
// resource whose recorded spec carries overrides its autoscaler decided (here or in the Apache
// operator) therefore compares unchanged and keeps running at that parallelism; new overrides
// are a spec change, applied in place where Flink can (scaleInPlace), else as an upgrade with
// the job's upgrade mode.
func (r *FlinkDeploymentReconciler) applyAutoscaler(ctx context.Context, s *scope, desired *flinkv1beta1.FlinkDeploymentSpec) error {
	if s.Deployed == nil || desired.Job == nil {
		return nil // nothing runs yet: the first deployment runs the spec as it is
	}
	conf, err := r.config(s, desired)
	if err != nil {
		return err
	}
	st := s.status()
	deployedConf, _ := s.Deployed.FlinkConfiguration.Flatten()
	reset := desired.Job.AutoscalerResetNonce != nil &&
		(s.Deployed.Job == nil || !jobs.EqualNonce(s.Deployed.Job.AutoscalerResetNonce, desired.Job.AutoscalerResetNonce))
	in := jobs.AutoscaleInput{
		Owner: s.dep, Kind: metrics.KindDeployment, Conf: conf,
		DeployedOverrides: deployedConf[jobs.KeyParallelismOverrides],
		Reset:             reset,
		Evaluate: st.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed &&
			st.JobManagerDeploymentStatus == flinkv1beta1.JobManagerReady && jobRunning(st) && st.JobStatus.JobID != "",
		JobID:    st.JobStatus.JobID,
		JobStart: jobs.EpochMillis(st.JobStatus.StartTime),
		Rest:     func(ctx context.Context) (*flink.Client, error) { return r.RestClient(ctx, s) },
	}
	out, err := r.Autoscaling.Autoscale(ctx, r.Client, r.Recorder, in)
	if err != nil {
		return err
	}
	st.Scaling = out.Scaling(st.Scaling, s.dep.Generation)
	if out.Overrides != "" {
		flat, err := desired.FlinkConfiguration.Flatten()
		if err != nil {
			return err
		}
		flat[jobs.KeyParallelismOverrides] = out.Overrides
		desired.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(flat)
	}
	if reset {
		// The reset is done once per nonce: recorded now, whether or not anything restarts.
		return s.recordAutoscalerReset(desired.Job.AutoscalerResetNonce)
	}
	return nil
}

// recordAutoscalerReset writes the handled autoscalerResetNonce into the last reconciled spec
// (nothing else of it changes).
func (s *scope) recordAutoscalerReset(nonce *int64) error {
	spec := s.Deployed.DeepCopy()
	if spec.Job == nil {
		return nil
	}
	n := *nonce
	spec.Job.AutoscalerResetNonce = &n
	raw, err := flinkv1beta1.EncodeReconciledSpec(*spec, s.FirstDeployment)
	if err != nil {
		return err
	}
	s.status().ReconciliationStatus.LastReconciledSpec = raw
	s.Deployed = spec
	return nil
}
