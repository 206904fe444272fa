package bluegreen

import (
	"testing"

	"github.com/stretchr/testify/assert"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

const (
	initBlue  = flinkv1beta1.BlueGreenInitializingBlue
	actBlue   = flinkv1beta1.BlueGreenActiveBlue
	actGreen  = flinkv1beta1.BlueGreenActiveGreen
	spBlue    = flinkv1beta1.BlueGreenSavepointingBlue
	spGreen   = flinkv1beta1.BlueGreenSavepointingGreen
	toBlue    = flinkv1beta1.BlueGreenTransitioningToBlue
	toGreen   = flinkv1beta1.BlueGreenTransitioningToGreen
	noneState = flinkv1beta1.FlinkBlueGreenDeploymentState("")
)

// TestNext lists every transition of the state machine, and the steps that stay.
func TestNext(t *testing.T) {
	ready := Inputs{ActiveReady: true, ActiveExists: true, TargetExists: true}
	with := func(f func(*Inputs)) Inputs { in := ready; f(&in); return in }

	tests := []struct {
		name  string
		state flinkv1beta1.FlinkBlueGreenDeploymentState
		in    Inputs
		want  Step
	}{
		// First deployment.
		{"new resource deploys blue", noneState, Inputs{}, Step{toBlue, ActionDeploy, Blue}},
		{"initializing deploys blue", initBlue, Inputs{}, Step{toBlue, ActionDeploy, Blue}},
		{"initializing waits while the template is suspended", initBlue, Inputs{Suspended: true}, Step{initBlue, ActionNone, Blue}},
		{"aborted first deployment waits for a new spec", initBlue, Inputs{Reconciled: true}, Step{initBlue, ActionNone, Blue}},
		{"aborted first deployment retries a new spec", initBlue, Inputs{Reconciled: true, Diff: DiffTransition}, Step{toBlue, ActionDeploy, Blue}},
		{"first blue not created yet", toBlue, Inputs{}, Step{toBlue, ActionDeploy, Blue}},
		{"first blue not ready", toBlue, Inputs{TargetExists: true}, Step{toBlue, ActionWait, Blue}},
		{"first blue ready: active without deletion delay", toBlue, Inputs{TargetExists: true, TargetReady: true}, Step{actBlue, ActionFinalize, Blue}},
		{"first blue never ready: back to initializing", toBlue, Inputs{TargetExists: true, AbortGraceElapsed: true}, Step{initBlue, ActionAbort, Blue}},

		// Resting.
		{"active blue, nothing changed", actBlue, ready, Step{actBlue, ActionNone, Blue}},
		{"active green, nothing changed", actGreen, ready, Step{actGreen, ActionNone, Green}},
		{"suspend acts in place", actBlue, with(func(i *Inputs) { i.Diff = DiffInPlace; i.Suspended = true }), Step{actBlue, ActionPatchActive, Blue}},
		{"resume acts in place", actGreen, with(func(i *Inputs) { i.Diff = DiffInPlace }), Step{actGreen, ActionPatchActive, Green}},
		{"change while suspended acts in place", actBlue, with(func(i *Inputs) { i.Diff = DiffTransition; i.Suspended = true }), Step{actBlue, ActionPatchActive, Blue}},
		{"change while active not ready acts in place", actBlue, with(func(i *Inputs) { i.Diff = DiffTransition; i.ActiveReady = false; i.NeedsSavepoint = true }), Step{actBlue, ActionPatchActive, Blue}},
		{"stateful change savepoints blue", actBlue, with(func(i *Inputs) { i.Diff = DiffTransition; i.NeedsSavepoint = true }), Step{spBlue, ActionTriggerSavepoint, Blue}},
		{"stateful change savepoints green", actGreen, with(func(i *Inputs) { i.Diff = DiffTransition; i.NeedsSavepoint = true }), Step{spGreen, ActionTriggerSavepoint, Green}},
		{"stateless change starts green", actBlue, with(func(i *Inputs) { i.Diff = DiffTransition }), Step{toGreen, ActionDeploy, Green}},
		{"stateless change starts blue", actGreen, with(func(i *Inputs) { i.Diff = DiffTransition }), Step{toBlue, ActionDeploy, Blue}},

		// Savepointing.
		{"savepoint in progress", spBlue, with(func(i *Inputs) { i.Diff = DiffTransition }), Step{spBlue, ActionWait, Blue}},
		{"savepoint of blue done starts green", spBlue, with(func(i *Inputs) { i.SavepointDone = true }), Step{toGreen, ActionDeploy, Green}},
		{"savepoint of green done starts blue", spGreen, with(func(i *Inputs) { i.SavepointDone = true }), Step{toBlue, ActionDeploy, Blue}},
		{"savepoint failed keeps blue", spBlue, with(func(i *Inputs) { i.SavepointFailed = true }), Step{actBlue, ActionFail, Blue}},
		{"savepoint too slow keeps green", spGreen, with(func(i *Inputs) { i.AbortGraceElapsed = true }), Step{actGreen, ActionFail, Green}},

		// Transitioning.
		{"green not created yet (operator restarted)", toGreen, with(func(i *Inputs) { i.TargetExists = false }), Step{toGreen, ActionDeploy, Green}},
		{"template changed during the switch", toGreen, with(func(i *Inputs) { i.Diff = DiffTransition }), Step{toGreen, ActionDeploy, Green}},
		{"green not ready yet", toGreen, ready, Step{toGreen, ActionWait, Green}},
		{"green ready: record", toGreen, with(func(i *Inputs) { i.TargetReady = true }), Step{toGreen, ActionRecordReady, Green}},
		{"green ready, deletion delay running", toGreen, with(func(i *Inputs) { i.TargetReady = true; i.ReadyRecorded = true }), Step{toGreen, ActionWait, Green}},
		{"green ready, deletion delay elapsed", toGreen, with(func(i *Inputs) { i.TargetReady = true; i.ReadyRecorded = true; i.DeletionDelayElapsed = true }), Step{actGreen, ActionFinalize, Green}},
		{"blue ready, deletion delay elapsed", toBlue, with(func(i *Inputs) { i.TargetReady = true; i.ReadyRecorded = true; i.DeletionDelayElapsed = true }), Step{actBlue, ActionFinalize, Blue}},
		{"green never ready: abort to blue", toGreen, with(func(i *Inputs) { i.AbortGraceElapsed = true }), Step{actBlue, ActionAbort, Green}},
		{"blue never ready: abort to green", toBlue, with(func(i *Inputs) { i.AbortGraceElapsed = true }), Step{actGreen, ActionAbort, Blue}},
		{"ready wins over an elapsed grace period", toGreen, with(func(i *Inputs) { i.TargetReady = true; i.AbortGraceElapsed = true }), Step{toGreen, ActionRecordReady, Green}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Next(tt.state, tt.in))
		})
	}
}

// TestNextCoversEveryState guards the table above: every upstream state has a row.
func TestNextCoversEveryState(t *testing.T) {
	for _, s := range []flinkv1beta1.FlinkBlueGreenDeploymentState{initBlue, actBlue, actGreen, spBlue, spGreen, toBlue, toGreen} {
		got := Next(s, Inputs{})
		assert.NotEmpty(t, got.Next, s)
	}
}

func TestCompare(t *testing.T) {
	base := func() *flinkv1beta1.FlinkBlueGreenDeploymentSpec {
		return &flinkv1beta1.FlinkBlueGreenDeploymentSpec{Template: flinkv1beta1.FlinkDeploymentTemplateSpec{
			Spec: flinkv1beta1.FlinkDeploymentSpec{Image: "flink:1.20", Job: &flinkv1beta1.JobSpec{JarURI: "local:///a.jar"}},
		}}
	}
	assert.Equal(t, DiffTransition, Compare(nil, base()), "nothing reconciled yet")
	assert.Equal(t, DiffNone, Compare(base(), base()))

	conf := base()
	conf.Configuration = map[string]string{KeyDeletionDelay: "1s"}
	assert.Equal(t, DiffNone, Compare(base(), conf), "configuration is not the children's")

	image := base()
	image.Template.Spec.Image = "flink:2.0"
	assert.Equal(t, DiffTransition, Compare(base(), image))

	running := base()
	running.Template.Spec.Job.State = flinkv1beta1.JobStateRunning
	assert.Equal(t, DiffNone, Compare(base(), running), "unset job.state means running")

	suspended := base()
	suspended.Template.Spec.Job.State = flinkv1beta1.JobStateSuspended
	suspended.Template.Spec.Image = "flink:2.0"
	assert.Equal(t, DiffInPlace, Compare(base(), suspended))
	assert.Equal(t, DiffInPlace, Compare(suspended, base()))
}

func TestParseOptions(t *testing.T) {
	o, errs := ParseOptions(nil)
	assert.Empty(t, errs)
	assert.Equal(t, DefaultOptions, o)

	o, errs = ParseOptions(map[string]string{KeyAbortGracePeriod: "10 min", KeyRescheduleInterval: "2s", KeyDeletionDelay: "0ms", "other": "x"})
	assert.Empty(t, errs)
	assert.Equal(t, Options{AbortGracePeriod: 10 * 60e9, RescheduleInterval: 2e9}, o)

	_, errs = ParseOptions(map[string]string{KeyDeletionDelay: "-1s", KeyAbortGracePeriod: "soon"})
	if assert.Len(t, errs, 2) {
		assert.Contains(t, errs[0].Error(), KeyAbortGracePeriod)
		assert.Contains(t, errs[1].Error(), KeyDeletionDelay)
	}
}

func TestSpecRoundTrip(t *testing.T) {
	spec := &flinkv1beta1.FlinkBlueGreenDeploymentSpec{Configuration: map[string]string{"a": "b"}}
	s, err := MarshalSpec(spec)
	assert.NoError(t, err)
	assert.Contains(t, s, `{"spec":{`)
	got, ok, err := UnmarshalSpec(s)
	assert.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, spec, got)
	_, ok, err = UnmarshalSpec("")
	assert.NoError(t, err)
	assert.False(t, ok)
	_, _, err = UnmarshalSpec("{")
	assert.Error(t, err)
}
