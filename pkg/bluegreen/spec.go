package bluegreen

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// Options are the blue/green settings of one resource.
type Options struct {
	// AbortGracePeriod is how long a new child (or the savepoint before it) may take before
	// the switch is aborted.
	AbortGracePeriod time.Duration
	// RescheduleInterval is how often a step in progress is looked at again.
	RescheduleInterval time.Duration
	// DeletionDelay is how long the old child keeps running after the new one is ready.
	DeletionDelay time.Duration
}

// DefaultOptions are upstream's defaults.
var DefaultOptions = Options{AbortGracePeriod: 10 * time.Minute, RescheduleInterval: 15 * time.Second}

// OptionError names the configuration key whose value is not a duration.
type OptionError struct {
	Key   string
	Value string
	Err   error
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("spec.configuration[%s]: %q is not a duration (a number and a unit such as ms, s, min): %v", e.Key, e.Value, e.Err)
}

// ParseOptions reads the blue/green keys of conf over the defaults. Other keys are ignored, as
// upstream does. Every bad value is reported.
func ParseOptions(conf map[string]string) (Options, []*OptionError) {
	o := DefaultOptions
	var errs []*OptionError
	for _, f := range []struct {
		key string
		dst *time.Duration
	}{
		{options.BlueGreenAbortGracePeriod.Key, &o.AbortGracePeriod},
		{options.BlueGreenRescheduleInterval.Key, &o.RescheduleInterval},
		{options.BlueGreenDeletionDelay.Key, &o.DeletionDelay},
	} {
		v, ok := conf[f.key]
		if !ok {
			continue
		}
		d, err := options.ParseDuration(v)
		if err != nil {
			errs = append(errs, &OptionError{Key: f.key, Value: v, Err: err})
			continue
		}
		*f.dst = d
	}
	return o, errs
}

// reconciledSpec is the JSON shape of status.lastReconciledSpec: the spec under "spec".
type reconciledSpec struct {
	Spec flinkv1beta1.FlinkBlueGreenDeploymentSpec `json:"spec"`
}

// MarshalSpec is the value of status.lastReconciledSpec for spec.
func MarshalSpec(spec *flinkv1beta1.FlinkBlueGreenDeploymentSpec) (string, error) {
	b, err := json.Marshal(reconciledSpec{Spec: *spec})
	if err != nil {
		return "", fmt.Errorf("marshal blue/green spec: %w", err)
	}
	return string(b), nil
}

// UnmarshalSpec reads status.lastReconciledSpec; ok is false when none was recorded.
func UnmarshalSpec(s string) (spec *flinkv1beta1.FlinkBlueGreenDeploymentSpec, ok bool, err error) {
	if s == "" {
		return nil, false, nil
	}
	var r reconciledSpec
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return nil, false, fmt.Errorf("status.lastReconciledSpec: %w", err)
	}
	return &r.Spec, true, nil
}

// jobState is the template's job state, running when unset.
func jobState(spec *flinkv1beta1.FlinkDeploymentSpec) flinkv1beta1.JobState {
	if spec.Job == nil || spec.Job.State == "" {
		return flinkv1beta1.JobStateRunning
	}
	return spec.Job.State
}

// IsSuspended says whether the template asks for a suspended job.
func IsSuspended(spec *flinkv1beta1.FlinkBlueGreenDeploymentSpec) bool {
	return jobState(&spec.Template.Spec) == flinkv1beta1.JobStateSuspended
}

// NeedsSavepoint says whether a switch starts the new child from a savepoint of the active
// one: for every upgrade mode but stateless, as upstream.
func NeedsSavepoint(spec *flinkv1beta1.FlinkBlueGreenDeploymentSpec) bool {
	job := spec.Template.Spec.Job
	return job != nil && job.UpgradeMode != "" && job.UpgradeMode != flinkv1beta1.UpgradeModeStateless
}

// specParts is a template's spec as upstream's ReflectiveDiffBuilder sees it, split in what
// needs a new child (rest) and what does not (ignorable): the FlinkDeploymentSpec fields marked
// @SpecDiff(IGNORE), and the flinkConfiguration keys under the IGNORE prefixes. The
// configuration is compared flattened, as Flink reads it.
type specParts struct {
	rest      flinkv1beta1.FlinkDeploymentSpec
	conf      map[string]string
	ignorable ignorable
}

type ignorable struct {
	job  flinkv1beta1.JobSpec
	conf map[string]string
}

// ignoredConfigPrefixes are the flinkConfiguration prefixes upstream's AbstractFlinkSpec marks
// IGNORE: operator and autoscaler options, and the default parallelism the autoscaler sets.
var ignoredConfigPrefixes = []string{"kubernetes.operator", "job.autoscaler", "parallelism.default"}

func split(spec flinkv1beta1.FlinkDeploymentSpec) specParts {
	c := specParts{conf: map[string]string{}, ignorable: ignorable{conf: map[string]string{}}}
	spec = *spec.DeepCopy()
	flat, err := spec.FlinkConfiguration.Flatten()
	if err == nil {
		for k, v := range flat {
			if hasAnyPrefix(k, ignoredConfigPrefixes) {
				c.ignorable.conf[k] = v
			} else {
				c.conf[k] = v
			}
		}
		spec.FlinkConfiguration = flinkv1beta1.FlinkConfiguration{}
	} // else compared as written: the validation reports it
	if spec.Job != nil {
		job := spec.Job
		c.ignorable.job = flinkv1beta1.JobSpec{
			UpgradeMode: job.UpgradeMode, SavepointTriggerNonce: job.SavepointTriggerNonce, CheckpointTriggerNonce: job.CheckpointTriggerNonce,
			InitialSavepointPath: job.InitialSavepointPath, AllowNonRestoredState: job.AllowNonRestoredState, AutoscalerResetNonce: job.AutoscalerResetNonce,
		}
		job.UpgradeMode, job.SavepointTriggerNonce, job.CheckpointTriggerNonce = "", nil, nil
		job.InitialSavepointPath, job.AllowNonRestoredState, job.AutoscalerResetNonce = "", nil, nil
	}
	c.rest = spec
	return c
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// changedTo says whether a nonce was set to a new value; removing one (null) is no change,
// as upstream's @SpecDiff(onNullIgnore = true).
func changedTo(before, after *int64) bool {
	return after != nil && (before == nil || *before != *after)
}

// withDefaults fills the job fields the API server defaults, so that a spec recorded before
// defaulting compares equal to the same spec read back.
func withDefaults(spec flinkv1beta1.FlinkDeploymentSpec) flinkv1beta1.FlinkDeploymentSpec {
	if spec.Job == nil {
		return spec
	}
	job := *spec.Job
	if job.State == "" {
		job.State = flinkv1beta1.JobStateRunning
	}
	if job.UpgradeMode == "" {
		job.UpgradeMode = flinkv1beta1.UpgradeModeStateless
	}
	spec.Job = &job
	return spec
}

// Compare classifies the change from last to current, as upstream's
// FlinkBlueGreenDeploymentSpecDiff. Only the template's spec matters to the children:
// configuration and ingress are read on every reconcile. In order:
//   - a change of job.state (suspend, resume) acts in place, whatever else changed with it;
//   - a new savepointRedeployNonce starts a new child from initialSavepointPath;
//   - a change of fields that need no restart (upstream's IGNORE: trigger nonces, upgradeMode,
//     initialSavepointPath, operator and autoscaler options...) patches the active child;
//   - anything else needs a new child.
func Compare(last, current *flinkv1beta1.FlinkBlueGreenDeploymentSpec) Diff {
	if last == nil {
		return DiffTransition
	}
	if jobState(&last.Template.Spec) != jobState(&current.Template.Spec) {
		return DiffInPlace
	}
	l, c := withDefaults(last.Template.Spec), withDefaults(current.Template.Spec)
	if l.Job != nil && c.Job != nil && changedTo(l.Job.SavepointRedeployNonce, c.Job.SavepointRedeployNonce) {
		return DiffSavepointRedeploy
	}
	// A nonce removed asks for nothing: compared as if it were kept.
	if c.RestartNonce == nil {
		c.RestartNonce = l.RestartNonce
	}
	if l.Job != nil && c.Job != nil && c.Job.SavepointRedeployNonce == nil {
		job := *c.Job
		job.SavepointRedeployNonce = l.Job.SavepointRedeployNonce
		c.Job = &job
	}
	ls, cs := split(l), split(c)
	if !equality.Semantic.DeepEqual(ls.rest, cs.rest) || !equality.Semantic.DeepEqual(ls.conf, cs.conf) {
		return DiffTransition
	}
	if equality.Semantic.DeepEqual(ls.ignorable.job, cs.ignorable.job) && equality.Semantic.DeepEqual(ls.ignorable.conf, cs.ignorable.conf) &&
		equality.Semantic.DeepEqual(last.Template.Spec.RestartNonce, current.Template.Spec.RestartNonce) &&
		equality.Semantic.DeepEqual(redeployNonce(&last.Template.Spec), redeployNonce(&current.Template.Spec)) {
		return DiffNone
	}
	return DiffPatch
}

func redeployNonce(spec *flinkv1beta1.FlinkDeploymentSpec) *int64 {
	if spec.Job == nil {
		return nil
	}
	return spec.Job.SavepointRedeployNonce
}

// ChildIngressTemplate is the template of child c's own ingress (from the template's
// spec.ingress): prefixed with the child's color, so the two children's hosts differ.
func ChildIngressTemplate(c Color, template string) string {
	return strings.ToLower(string(c)) + "-" + template
}
