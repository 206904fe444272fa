package kubectlflink

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// jobSpecOf is the parts of a FlinkDeployment's or FlinkSessionJob's spec that suspend, resume
// and restart change.
type jobSpecOf struct {
	job          *flinkv1beta1.JobSpec
	restartNonce **int64
}

// specOf is the changeable spec of obj, or an error saying why it has none.
func specOf(t Target, obj client.Object) (jobSpecOf, error) {
	switch o := obj.(type) {
	case *flinkv1beta1.FlinkDeployment:
		return jobSpecOf{job: o.Spec.Job, restartNonce: &o.Spec.RestartNonce}, nil
	case *flinkv1beta1.FlinkSessionJob:
		return jobSpecOf{job: o.Spec.Job, restartNonce: &o.Spec.RestartNonce}, nil
	}
	return jobSpecOf{}, fmt.Errorf("%s: only FlinkDeployments and FlinkSessionJobs are suspended, resumed and restarted this way", t)
}

// change is one edit of a spec: it reports what it changed ("" for nothing), or why it cannot.
type change func(t Target, s jobSpecOf) (string, error)

// setJobState sets spec.job.state.
func setJobState(state flinkv1beta1.JobState) change {
	return func(t Target, s jobSpecOf) (string, error) {
		if s.job == nil {
			return "", fmt.Errorf("%s is a session cluster, which has no job: %s its FlinkSessionJobs instead (--kind sessionjob)", t, verbOf(state))
		}
		before := s.job.State
		if before == "" {
			before = flinkv1beta1.JobStateRunning
		}
		if before == state {
			return "", nil
		}
		s.job.State = state
		return fmt.Sprintf("spec.job.state: %s -> %s", before, state), nil
	}
}

func verbOf(state flinkv1beta1.JobState) string {
	if state == flinkv1beta1.JobStateSuspended {
		return "suspend"
	}
	return "resume"
}

// bumpRestartNonce increments spec.restartNonce, which restarts the job (or the session cluster).
func bumpRestartNonce(_ Target, s jobSpecOf) (string, error) {
	var before int64
	if *s.restartNonce != nil {
		before = **s.restartNonce
	}
	next := before + 1
	*s.restartNonce = &next
	return fmt.Sprintf("spec.restartNonce: %d -> %d", before, next), nil
}

// patchSpec reads the target, applies edit, and writes the difference as a merge patch guarded
// by the resourceVersion read, so a concurrent edit (another nonce bump) is not lost.
func patchSpec(ctx context.Context, c client.Client, t Target, edit change) (string, error) {
	obj, err := getTyped(ctx, c, t)
	if err != nil {
		return "", err
	}
	before := obj.DeepCopyObject().(client.Object)
	spec, err := specOf(t, obj)
	if err != nil {
		return "", err
	}
	what, err := edit(t, spec)
	if err != nil || what == "" {
		return what, err
	}
	if err := c.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return "", fmt.Errorf("patch %s (%s): %w", t, what, err)
	}
	return what, nil
}

func (p *plugin) patchCommand(use, short, nothing string, edit change) *cobra.Command {
	var kind string
	cmd := &cobra.Command{
		Use:   use + " NAME",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, t, err := p.connectTo(args[0], kind)
			if err != nil {
				return err
			}
			what, err := patchSpec(cmd.Context(), c.Client, t, edit)
			if err != nil {
				return err
			}
			if what == "" {
				_, err = fmt.Fprintf(p.out(), "%s: %s; nothing changed\n", t, nothing)
				return err
			}
			_, err = fmt.Fprintf(p.out(), "%s patched: %s\n", t, what)
			return err
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "kind of NAME: deployment (default) or sessionjob")
	return cmd
}

func (p *plugin) suspendCommand() *cobra.Command {
	return p.patchCommand("suspend", "Suspend the job (spec.job.state: suspended); its upgrade mode says what state is kept",
		"already suspended", setJobState(flinkv1beta1.JobStateSuspended))
}

func (p *plugin) resumeCommand() *cobra.Command {
	return p.patchCommand("resume", "Resume a suspended job (spec.job.state: running)",
		"already running", setJobState(flinkv1beta1.JobStateRunning))
}

func (p *plugin) restartCommand() *cobra.Command {
	return p.patchCommand("restart", "Restart the job or cluster (spec.restartNonce + 1), keeping state as its upgrade mode says",
		"", bumpRestartNonce)
}
