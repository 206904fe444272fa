package bluegreen

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/options"
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

// ready is a resting resource whose children run: the inputs most rows start from.
var ready = Inputs{ActiveReady: true, ActiveExists: true, TargetExists: true}

func with(f func(*Inputs)) Inputs { in := ready; f(&in); return in }

func suspend(i *Inputs) { i.Diff = DiffInPlace; i.Suspended = true }

type nextCase struct {
	name  string
	state flinkv1beta1.FlinkBlueGreenDeploymentState
	in    Inputs
	want  Step
}

// nextCases lists every transition of the state machine, and the steps that stay.
// TestNextCoversEveryState checks every state and every action has a row.
var nextCases = []nextCase{
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
	{"change while active not ready fails and touches nothing", actBlue, with(func(i *Inputs) { i.Diff = DiffTransition; i.ActiveReady = false; i.NeedsSavepoint = true }), Step{actBlue, ActionFailNotReady, Blue}},
	{"patch while active not ready fails and touches nothing", actGreen, with(func(i *Inputs) { i.Diff = DiffPatch; i.ActiveReady = false }), Step{actGreen, ActionFailNotReady, Green}},
	{"change while active not ready and already failing waits", actBlue, with(func(i *Inputs) { i.Diff = DiffTransition; i.ActiveReady = false; i.Failing = true }), Step{actBlue, ActionNone, Blue}},
	{"ignorable change patches blue in place", actBlue, with(func(i *Inputs) { i.Diff = DiffPatch; i.NeedsSavepoint = true }), Step{actBlue, ActionPatchActive, Blue}},
	{"ignorable change patches green in place", actGreen, with(func(i *Inputs) { i.Diff = DiffPatch; i.NeedsSavepoint = true }), Step{actGreen, ActionPatchActive, Green}},
	{"savepoint redeploy starts green without a savepoint", actBlue, with(func(i *Inputs) { i.Diff = DiffSavepointRedeploy; i.NeedsSavepoint = true }), Step{toGreen, ActionDeploy, Green}},
	{"savepoint redeploy starts blue without a savepoint", actGreen, with(func(i *Inputs) { i.Diff = DiffSavepointRedeploy; i.NeedsSavepoint = true }), Step{toBlue, ActionDeploy, Blue}},
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
	{"suspend after the savepoint suspends blue in place", spBlue, with(func(i *Inputs) { suspend(i); i.SavepointDone = true }), Step{actBlue, ActionPatchActive, Blue}},
	{"suspend after a failed savepoint suspends blue in place", spBlue, with(func(i *Inputs) { suspend(i); i.SavepointFailed = true }), Step{actBlue, ActionPatchActive, Blue}},
	{"suspend after a too slow savepoint suspends green in place", spGreen, with(func(i *Inputs) { suspend(i); i.AbortGraceElapsed = true }), Step{actGreen, ActionPatchActive, Green}},

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

	// A suspend during a switch waits for it to end; the switch goes on with the recorded template.
	{"suspend during the switch: green not ready, wait", toGreen, with(suspend), Step{toGreen, ActionWait, Green}},
	{"suspend during the switch: green created from the recorded template", toGreen, with(func(i *Inputs) { suspend(i); i.TargetExists = false }), Step{toGreen, ActionDeployRecorded, Green}},
	{"suspend during the switch: green ready, record", toGreen, with(func(i *Inputs) { suspend(i); i.TargetReady = true }), Step{toGreen, ActionRecordReady, Green}},
	{"suspend during the switch: green ready, finalize", toGreen, with(func(i *Inputs) {
		suspend(i)
		i.TargetReady = true
		i.ReadyRecorded = true
		i.DeletionDelayElapsed = true
	}), Step{actGreen, ActionFinalize, Green}},
	{"suspend during the switch: blue never ready, abort", toBlue, with(func(i *Inputs) { suspend(i); i.AbortGraceElapsed = true }), Step{actGreen, ActionAbort, Blue}},
}

func TestNext(t *testing.T) {
	for _, tt := range nextCases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Next(tt.state, tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestNextCoversEveryState guards the table above: every state of the package's list (and the
// empty state of a new resource) has a row, and every action is the answer of a row. A state
// Next has no case for fails TestNext instead (Next refuses it).
func TestNextCoversEveryState(t *testing.T) {
	rows := map[flinkv1beta1.FlinkBlueGreenDeploymentState]int{}
	answers := map[Action]int{}
	for _, c := range nextCases {
		rows[c.state]++
		answers[c.want.Action]++
	}
	for _, s := range append([]flinkv1beta1.FlinkBlueGreenDeploymentState{noneState}, States()...) {
		assert.NotZero(t, rows[s], "state %q has no row in nextCases", s)
	}
	for _, a := range Actions() {
		assert.NotZero(t, answers[a], "action %q is the answer of no row in nextCases", a)
	}
	for a := range answers {
		assert.Contains(t, Actions(), a, "Actions() lacks an action Next returns")
	}
}

// TestNextRefusesAnUnknownState: a state outside States() is an error naming the field and the
// states allowed, and no step (not a fresh start from INITIALIZING_BLUE, which would forget
// which child serves).
func TestNextRefusesAnUnknownState(t *testing.T) {
	for _, in := range []Inputs{{}, ready, with(func(i *Inputs) { i.Diff = DiffTransition; i.NeedsSavepoint = true })} {
		step, err := Next("PAUSED_BLUE", in)
		var unknown *UnknownStateError
		require.ErrorAs(t, err, &unknown)
		assert.Equal(t, flinkv1beta1.FlinkBlueGreenDeploymentState("PAUSED_BLUE"), unknown.State)
		assert.Equal(t, Step{}, step)
		assert.Contains(t, err.Error(), `status.blueGreenState: "PAUSED_BLUE"`)
		for _, s := range States() {
			assert.Contains(t, err.Error(), string(s))
		}
	}
	assert.NoError(t, CheckState(noneState), "a resource never reconciled")
	for _, s := range States() {
		assert.NoError(t, CheckState(s))
	}
}

// TestStatesAreTheCRDs: States() is the enum the API server enforces on status.blueGreenState.
func TestStatesAreTheCRDs(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "flink.apache.org_flinkbluegreendeployments.yaml"))
	require.NoError(t, err)
	var crd apiextensionsv1.CustomResourceDefinition
	require.NoError(t, yaml.Unmarshal(raw, &crd))
	require.Len(t, crd.Spec.Versions, 1)
	prop := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties["blueGreenState"]
	var enum []flinkv1beta1.FlinkBlueGreenDeploymentState
	for _, v := range prop.Enum {
		var s flinkv1beta1.FlinkBlueGreenDeploymentState
		require.NoError(t, json.Unmarshal(v.Raw, &s))
		enum = append(enum, s)
	}
	require.NotEmpty(t, enum)
	assert.Equal(t, enum, States())
}

func TestCompare(t *testing.T) {
	base := func() *flinkv1beta1.FlinkBlueGreenDeploymentSpec {
		return &flinkv1beta1.FlinkBlueGreenDeploymentSpec{Template: flinkv1beta1.FlinkDeploymentTemplateSpec{
			Spec: flinkv1beta1.FlinkDeploymentSpec{
				Image:              "flink:1.20",
				FlinkConfiguration: flinkv1beta1.NewFlinkConfiguration(map[string]string{"state.savepoints.dir": "file:///sp"}),
				Job:                &flinkv1beta1.JobSpec{JarURI: "local:///a.jar", UpgradeMode: flinkv1beta1.UpgradeModeSavepoint},
			},
		}}
	}
	n := func(v int64) *int64 { return &v }
	with := func(f func(s *flinkv1beta1.FlinkDeploymentSpec)) *flinkv1beta1.FlinkBlueGreenDeploymentSpec {
		b := base()
		f(&b.Template.Spec)
		return b
	}
	conf := func(kv ...string) func(s *flinkv1beta1.FlinkDeploymentSpec) {
		return func(s *flinkv1beta1.FlinkDeploymentSpec) {
			flat, err := s.FlinkConfiguration.Flatten()
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < len(kv); i += 2 {
				flat[kv[i]] = kv[i+1]
			}
			s.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(flat)
		}
	}
	withBG := func(f func(*flinkv1beta1.FlinkBlueGreenDeploymentSpec)) *flinkv1beta1.FlinkBlueGreenDeploymentSpec {
		b := base()
		f(b)
		return b
	}
	tests := []struct {
		name          string
		last, current *flinkv1beta1.FlinkBlueGreenDeploymentSpec
		want          Diff
	}{
		{"nothing reconciled yet", nil, base(), DiffTransition},
		{"same spec", base(), base(), DiffNone},
		{"configuration is not the children's", base(), withBG(func(b *flinkv1beta1.FlinkBlueGreenDeploymentSpec) {
			b.Configuration = map[string]string{options.BlueGreenDeletionDelay.Key: "1s"}
		}), DiffNone},
		{"image", base(), with(func(s *flinkv1beta1.FlinkDeploymentSpec) { s.Image = "flink:2.0" }), DiffTransition},
		{"unset job.state means running", base(), with(func(s *flinkv1beta1.FlinkDeploymentSpec) { s.Job.State = flinkv1beta1.JobStateRunning }), DiffNone},
		{"suspend with another change acts in place", base(), with(func(s *flinkv1beta1.FlinkDeploymentSpec) {
			s.Job.State = flinkv1beta1.JobStateSuspended
			s.Image = "flink:2.0"
		}), DiffInPlace},
		{"resume acts in place", with(func(s *flinkv1beta1.FlinkDeploymentSpec) { s.Job.State = flinkv1beta1.JobStateSuspended }), base(), DiffInPlace},

		// Upstream's IGNORE fields of a FlinkDeploymentSpec: PATCH_CHILD.
		{"savepointTriggerNonce", base(), with(func(s *flinkv1beta1.FlinkDeploymentSpec) { s.Job.SavepointTriggerNonce = n(1) }), DiffPatch},
		{"checkpointTriggerNonce", base(), with(func(s *flinkv1beta1.FlinkDeploymentSpec) { s.Job.CheckpointTriggerNonce = n(1) }), DiffPatch},
		{"upgradeMode", base(), with(func(s *flinkv1beta1.FlinkDeploymentSpec) { s.Job.UpgradeMode = flinkv1beta1.UpgradeModeLastState }), DiffPatch},
		{"initialSavepointPath", base(), with(func(s *flinkv1beta1.FlinkDeploymentSpec) { s.Job.InitialSavepointPath = "file:///sp/1" }), DiffPatch},
		{"allowNonRestoredState", base(), with(func(s *flinkv1beta1.FlinkDeploymentSpec) { b := true; s.Job.AllowNonRestoredState = &b }), DiffPatch},
		{"autoscalerResetNonce", base(), with(func(s *flinkv1beta1.FlinkDeploymentSpec) { s.Job.AutoscalerResetNonce = n(3) }), DiffPatch},
		{"an operator option", base(), with(conf("kubernetes.operator.periodic.savepoint.interval", "1h")), DiffPatch},
		{"an autoscaler option", base(), with(conf("job.autoscaler.enabled", "true")), DiffPatch},
		{"parallelism.default", base(), with(conf("parallelism.default", "4")), DiffPatch},
		{"restartNonce removed", with(func(s *flinkv1beta1.FlinkDeploymentSpec) { s.RestartNonce = n(1) }), base(), DiffPatch},
		{"savepointRedeployNonce removed", with(func(s *flinkv1beta1.FlinkDeploymentSpec) { s.Job.SavepointRedeployNonce = n(1) }), base(), DiffPatch},
		{"a nonce with a Flink option is a switch", base(), with(func(s *flinkv1beta1.FlinkDeploymentSpec) {
			s.Job.SavepointTriggerNonce = n(1)
			conf("execution.checkpointing.interval", "4s")(s)
		}), DiffTransition},
		{"restartNonce set is a switch", base(), with(func(s *flinkv1beta1.FlinkDeploymentSpec) { s.RestartNonce = n(1) }), DiffTransition},
		{"vertex parallelism overrides are a switch", base(), with(conf("pipeline.jobvertex-parallelism-overrides", "a:2")), DiffTransition},

		// SAVEPOINT_REDEPLOY wins over everything but suspend and resume.
		{"savepointRedeployNonce set", base(), with(func(s *flinkv1beta1.FlinkDeploymentSpec) {
			s.Job.SavepointRedeployNonce = n(1)
			s.Job.InitialSavepointPath = "file:///sp/1"
		}), DiffSavepointRedeploy},
		{"savepointRedeployNonce changed with the image", with(func(s *flinkv1beta1.FlinkDeploymentSpec) { s.Job.SavepointRedeployNonce = n(1) }),
			with(func(s *flinkv1beta1.FlinkDeploymentSpec) { s.Job.SavepointRedeployNonce = n(2); s.Image = "flink:2.0" }), DiffSavepointRedeploy},

		// The configuration is compared as Flink reads it: flattened.
		{"nested and flat configuration are the same", base(), with(func(s *flinkv1beta1.FlinkDeploymentSpec) {
			s.FlinkConfiguration = flinkv1beta1.FlinkConfiguration{Raw: []byte(`{"state":{"savepoints":{"dir":"file:///sp"}}}`)}
		}), DiffNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Compare(tt.last, tt.current))
		})
	}
}

func TestParseOptions(t *testing.T) {
	o, errs := ParseOptions(nil)
	assert.Empty(t, errs)
	assert.Equal(t, DefaultOptions, o)

	o, errs = ParseOptions(map[string]string{options.BlueGreenAbortGracePeriod.Key: "10 min", options.BlueGreenRescheduleInterval.Key: "2s", options.BlueGreenDeletionDelay.Key: "0ms", "other": "x"})
	assert.Empty(t, errs)
	assert.Equal(t, Options{AbortGracePeriod: 10 * 60e9, RescheduleInterval: 2e9}, o)

	_, errs = ParseOptions(map[string]string{options.BlueGreenDeletionDelay.Key: "-1s", options.BlueGreenAbortGracePeriod.Key: "soon"})
	if assert.Len(t, errs, 2) {
		assert.Contains(t, errs[0].Error(), options.BlueGreenAbortGracePeriod.Key)
		assert.Contains(t, errs[1].Error(), options.BlueGreenDeletionDelay.Key)
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
