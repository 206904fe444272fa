package flinkbluegreendeployment

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/bluegreen"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/pkg/options"
	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// The blue/green action handlers, one at a time, on a fake client: no manager, no polling. Each
// row starts from a recorded status and the objects a cluster would hold, runs one step and
// checks the status written and which children, snapshots and ingress were created, changed or
// deleted.

var bgNow = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// The options fakeBlueGreenResource sets.
const (
	bgGrace      = 10 * time.Minute
	bgReschedule = 15 * time.Second
	bgDelay      = 5 * time.Second
)

// bgFake is one handler run: the reconciler on a fake client holding the resource and objs.
type bgFake struct {
	c      client.Client
	r      *FlinkBlueGreenDeploymentReconciler
	events *record.FakeRecorder
	bg     *flinkv1beta1.FlinkBlueGreenDeployment
	// early are the objects written before the step's status was.
	early []string
}

// fakeBlueGreenResource is newBlueGreen with an identity (owner references need its UID) and
// options the assertions can tell apart.
func fakeBlueGreenResource(t *testing.T) *flinkv1beta1.FlinkBlueGreenDeployment {
	bg := fixtures.NewBlueGreen(t, "ns", "app", "10 min")
	bg.UID, bg.Generation = types.UID("bg-uid"), 3
	bg.Spec.Configuration[options.BlueGreenRescheduleInterval.Key] = "15 s"
	bg.Spec.Configuration[options.BlueGreenDeletionDelay.Key] = "5 s"
	return bg
}

// recordSpec records bg's spec as acted upon, as a former reconcile would have.
func recordSpecOf(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment) {
	t.Helper()
	spec, err := bluegreen.MarshalSpec(&bg.Spec)
	require.NoError(t, err)
	bg.Status.LastReconciledSpec, bg.Status.ObservedGeneration = spec, bg.Generation
}

// childOf is child c as the controller creates it from bg's template, starting from path,
// with a running job when ready.
func childOf(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment, c bluegreen.Color, path string, ready bool) *flinkv1beta1.FlinkDeployment {
	t.Helper()
	r := &FlinkBlueGreenDeploymentReconciler{Scheme: bgScheme}
	d, err := r.desiredChild(bg, &bg.Spec.Template, c, path)
	require.NoError(t, err)
	d.Generation = 1
	d.Status.ObservedGeneration = 1
	d.Status.LifecycleState = flinkv1beta1.LifecycleDeployed
	d.Status.JobStatus = flinkv1beta1.JobStatus{State: flinkv1beta1.JobStatusReconciling, JobID: "job-" + string(c)}
	if ready {
		d.Status.LifecycleState = flinkv1beta1.LifecycleStable
		d.Status.JobStatus.State = flinkv1beta1.JobStatusRunning
	}
	return d
}

func snapshotOf(bg *flinkv1beta1.FlinkBlueGreenDeployment, c bluegreen.Color, state flinkv1beta1.SnapshotState, path, errMsg string) *flinkv1beta1.FlinkStateSnapshot {
	s := &flinkv1beta1.FlinkStateSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: bg.Namespace, Name: savepointName(bg, c),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "flink.apache.org/v1beta1", Kind: "FlinkBlueGreenDeployment", Name: bg.Name, UID: bg.UID}}}}
	s.Spec.JobReference = &flinkv1beta1.JobReference{Kind: flinkv1beta1.JobKindFlinkDeployment, Name: childName(bg, c)}
	s.Status.State, s.Status.Path, s.Status.Error = state, path, errMsg
	return s
}

var bgScheme = kubeenv.Scheme()

// newBGFake builds the fake cluster: bg (status included) and objs.
func newBGFake(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment, objs ...client.Object) *bgFake {
	t.Helper()
	f := &bgFake{events: record.NewFakeRecorder(20)}
	// Every write of another object than the resource is noted when it comes before the step's
	// status is written (writeStatus stamps lastReconciledTimestamp with the fake clock).
	early := func(ctx context.Context, c client.WithWatch, obj client.Object) {
		if _, own := obj.(*flinkv1beta1.FlinkBlueGreenDeployment); own {
			return
		}
		stored := &flinkv1beta1.FlinkBlueGreenDeployment{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(bg), stored); err == nil && stored.Status.LastReconciledTimestamp != bgNow.Format(time.RFC3339Nano) {
			gvk, _ := apiutil.GVKForObject(obj, bgScheme)
			f.early = append(f.early, gvk.Kind+"/"+obj.GetName())
		}
	}
	c := fake.NewClientBuilder().WithScheme(bgScheme).
		WithStatusSubresource(&flinkv1beta1.FlinkBlueGreenDeployment{}, &flinkv1beta1.FlinkDeployment{}, &flinkv1beta1.FlinkStateSnapshot{}).
		WithObjects(append(objs, bg)...).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				early(ctx, c, obj)
				return c.Create(ctx, obj, opts...)
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				early(ctx, c, obj)
				return c.Update(ctx, obj, opts...)
			},
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				early(ctx, c, obj)
				return c.Patch(ctx, obj, patch, opts...)
			},
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				early(ctx, c, obj)
				return c.Delete(ctx, obj, opts...)
			},
		}).Build()
	f.c = c
	f.r = &FlinkBlueGreenDeploymentReconciler{Client: c, Scheme: bgScheme, Recorder: f.events, Now: func() time.Time { return bgNow }}
	f.bg = fixtures.GetBlueGreen(t, c, bg.Namespace, bg.Name)
	return f
}

// inventory is the resource versions of the objects the handlers create, change and delete.
func (f *bgFake) inventory(t *testing.T) map[string]string {
	t.Helper()
	ctx := context.Background()
	inv := map[string]string{}
	var deps flinkv1beta1.FlinkDeploymentList
	require.NoError(t, f.c.List(ctx, &deps))
	for _, d := range deps.Items {
		inv["FlinkDeployment/"+d.Name] = d.ResourceVersion
	}
	var snaps flinkv1beta1.FlinkStateSnapshotList
	require.NoError(t, f.c.List(ctx, &snaps))
	for _, s := range snaps.Items {
		inv["FlinkStateSnapshot/"+s.Name] = s.ResourceVersion
	}
	var ings networkingv1.IngressList
	require.NoError(t, f.c.List(ctx, &ings))
	for _, i := range ings.Items {
		inv["Ingress/"+i.Name] = i.ResourceVersion
	}
	return inv
}

func (f *bgFake) drainEvents() []string { return fixtures.Recorded(f.events) }

func (f *bgFake) child(t *testing.T, c bluegreen.Color) *flinkv1beta1.FlinkDeployment {
	t.Helper()
	d := &flinkv1beta1.FlinkDeployment{}
	require.NoError(t, f.c.Get(context.Background(), client.ObjectKey{Namespace: f.bg.Namespace, Name: childName(f.bg, c)}, d))
	return d
}

func (f *bgFake) snapshot(t *testing.T, name string) *flinkv1beta1.FlinkStateSnapshot {
	t.Helper()
	s := &flinkv1beta1.FlinkStateSnapshot{}
	require.NoError(t, f.c.Get(context.Background(), client.ObjectKey{Namespace: f.bg.Namespace, Name: name}, s))
	return s
}

// outcome is what a handler did.
type outcome struct {
	res    ctrl.Result
	bg     *flinkv1beta1.FlinkBlueGreenDeployment // as stored after the step
	events []string
}

// bgActionCase is one row: the resource before (setup changes the status and spec, and returns
// the other objects), the step, and what the handler must have done.
type bgActionCase struct {
	name  string
	setup func(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object
	step  bluegreen.Step
	// created, changed and deleted name objects as Kind/name.
	created, changed, deleted []string
	// early are the objects written before the status (the rest is written after it, so that
	// an operator restarted in between finds the step recorded).
	early []string
	check func(t *testing.T, f *bgFake, out outcome)
}

func runBGActionCases(t *testing.T, cases []bgActionCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bg := fakeBlueGreenResource(t)
			objs := tc.setup(t, bg)
			f := newBGFake(t, bg, objs...)
			before := f.inventory(t)
			ctx := context.Background()
			obs, err := f.r.observe(ctx, f.bg)
			require.NoError(t, err)
			require.NotNil(t, obs, "observe refused the resource: %s", f.bg.Status.Error)
			res, err := f.r.act(ctx, f.bg, obs, tc.step)
			require.NoError(t, err)

			after := f.inventory(t)
			var created, changed, deleted []string
			for k, rv := range after {
				switch old, ok := before[k]; {
				case !ok:
					created = append(created, k)
				case old != rv:
					changed = append(changed, k)
				}
			}
			for k := range before {
				if _, ok := after[k]; !ok {
					deleted = append(deleted, k)
				}
			}
			for _, l := range [][]string{created, changed, deleted, tc.created, tc.changed, tc.deleted} {
				sort.Strings(l)
			}
			assert.Equal(t, tc.created, created, "created")
			assert.Equal(t, tc.changed, changed, "changed")
			assert.Equal(t, tc.deleted, deleted, "deleted")
			assert.Equal(t, tc.early, f.early, "written before the status")

			stored := fixtures.GetBlueGreen(t, f.c, bg.Namespace, bg.Name)
			assert.Equal(t, tc.step.Next, stored.Status.BlueGreenState, "the state recorded")
			assert.Equal(t, bgNow.Format(time.RFC3339Nano), stored.Status.LastReconciledTimestamp, "the status was written")
			if tc.check != nil {
				tc.check(t, f, outcome{res: res, bg: stored, events: f.drainEvents()})
			}
		})
	}
}

func condition(bg *flinkv1beta1.FlinkBlueGreenDeployment, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(bg.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// withGrace sets abortTimestamp as a switch started at bgNow-age would have.
func withGrace(bg *flinkv1beta1.FlinkBlueGreenDeployment, age time.Duration) string {
	bg.Status.AbortTimestamp = bgNow.Add(bgGrace - age).UTC().Format(time.RFC3339Nano)
	return bg.Status.AbortTimestamp
}

func changedImage(bg *flinkv1beta1.FlinkBlueGreenDeployment) {
	bg.Spec.Template.Spec.Image = "flink:1.20.1"
	bg.Generation++
}

// Every action Next can return has a handler, and nothing else does.
func TestBlueGreenActionHandlersCoverEveryAction(t *testing.T) {
	for _, a := range bluegreen.Actions() {
		assert.NotNil(t, actionHandlers[a], "no handler for %s", a)
	}
	assert.Len(t, actionHandlers, len(bluegreen.Actions()))
}

func TestBlueGreenActionRest(t *testing.T) {
	ingress := "Ingress/" + native.IngressName("app")
	runBGActionCases(t, []bgActionCase{
		{
			name: "active blue: the ingress points at blue, a replaced green is deleted, the job is shown",
			setup: func(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object {
				bg.Status.BlueGreenState = flinkv1beta1.BlueGreenActiveBlue
				recordSpecOf(t, bg)
				green := childOf(t, bg, bluegreen.Green, "", true)
				green.Annotations = map[string]string{AnnotationBlueGreenRetired: "true"}
				return []client.Object{childOf(t, bg, bluegreen.Blue, "", true), green}
			},
			step:    bluegreen.Step{Next: flinkv1beta1.BlueGreenActiveBlue, Action: bluegreen.ActionNone, Target: bluegreen.Blue},
			created: []string{ingress},
			deleted: []string{"FlinkDeployment/app-green"},
			check: func(t *testing.T, f *bgFake, out outcome) {
				assert.Equal(t, ctrl.Result{}, out.res)
				assert.Equal(t, flinkv1beta1.JobStatusRunning, out.bg.Status.JobStatus.State)
				assert.Equal(t, "job-BLUE", out.bg.Status.JobStatus.JobID)
				assert.Equal(t, metav1.ConditionTrue, condition(out.bg, ConditionBlueGreenReady).Status)
				assert.Equal(t, metav1.ConditionFalse, condition(out.bg, ConditionBlueGreenProgressing).Status)
				assert.Equal(t, flinkconf.RESTServiceName("app-blue"), fixtures.IngressBackend(t, f.c, "ns", "app"))
			},
		},
		{
			name: "active green: the recorded template is applied to green if it was not; a suspended blue left by an abort stays",
			setup: func(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object {
				bg.Status.BlueGreenState = flinkv1beta1.BlueGreenActiveGreen
				green := childOf(t, bg, bluegreen.Green, "file:///sp/1", true)
				blue := childOf(t, bg, bluegreen.Blue, "", false)
				blue.Spec.Job.State = flinkv1beta1.JobStateSuspended
				changedImage(bg)
				recordSpecOf(t, bg)
				return []client.Object{green, blue}
			},
			step:    bluegreen.Step{Next: flinkv1beta1.BlueGreenActiveGreen, Action: bluegreen.ActionNone, Target: bluegreen.Green},
			created: []string{ingress},
			changed: []string{"FlinkDeployment/app-green"},
			check: func(t *testing.T, f *bgFake, out outcome) {
				green := f.child(t, bluegreen.Green)
				assert.Equal(t, "flink:1.20.1", green.Spec.Image)
				assert.Equal(t, "file:///sp/1", green.Spec.Job.InitialSavepointPath, "the savepoint it started from is kept")
				assert.Equal(t, flinkconf.RESTServiceName("app-green"), fixtures.IngressBackend(t, f.c, "ns", "app"))
			},
		},
		{
			name: "active blue after a failed switch: blue is not re-applied, the failure stays reported",
			setup: func(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object {
				bg.Status.BlueGreenState = flinkv1beta1.BlueGreenActiveBlue
				blue := childOf(t, bg, bluegreen.Blue, "", true)
				changedImage(bg)
				recordSpecOf(t, bg)
				bg.Status.Error = "Savepoint of 'app-blue' failed"
				bg.Status.JobStatus.State = flinkv1beta1.JobStatusFailing
				return []client.Object{blue}
			},
			step:    bluegreen.Step{Next: flinkv1beta1.BlueGreenActiveBlue, Action: bluegreen.ActionNone, Target: bluegreen.Blue},
			created: []string{ingress},
			check: func(t *testing.T, f *bgFake, out outcome) {
				assert.Equal(t, flinkv1beta1.JobStatusFailing, out.bg.Status.JobStatus.State)
				assert.Equal(t, "Failed", condition(out.bg, ConditionBlueGreenReady).Reason)
				assert.Equal(t, "flink:1.20", f.child(t, bluegreen.Blue).Spec.Image)
			},
		},
		{
			name: "initializing with a suspended template: no child, the job is shown suspended",
			setup: func(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object {
				bg.Spec.Template.Spec.Job.State = flinkv1beta1.JobStateSuspended
				return nil
			},
			step: bluegreen.Step{Next: flinkv1beta1.BlueGreenInitializingBlue, Action: bluegreen.ActionNone, Target: bluegreen.Blue},
			check: func(t *testing.T, f *bgFake, out outcome) {
				assert.Equal(t, flinkv1beta1.JobStatusSuspended, out.bg.Status.JobStatus.State)
				assert.Empty(t, out.bg.Status.LastReconciledSpec, "nothing deployed, nothing recorded")
			},
		},
	})
}

func TestBlueGreenActionWait(t *testing.T) {
	runBGActionCases(t, []bgActionCase{
		{
			name: "savepointing, snapshot recorded but not created (operator stopped in between): created",
			setup: func(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object {
				bg.Status.BlueGreenState = flinkv1beta1.BlueGreenSavepointingBlue
				recordSpecOf(t, bg)
				changedImage(bg)
				bg.Status.SavepointTriggerID = savepointName(bg, bluegreen.Blue)
				withGrace(bg, time.Minute)
				return []client.Object{childOf(t, bg, bluegreen.Blue, "", true)}
			},
			step:    bluegreen.Step{Next: flinkv1beta1.BlueGreenSavepointingBlue, Action: bluegreen.ActionWait, Target: bluegreen.Blue},
			created: []string{"FlinkStateSnapshot/app-blue-4"},
			early:   []string{"FlinkStateSnapshot/app-blue-4"}, // recorded by an earlier reconcile: created as it should have been
			check: func(t *testing.T, f *bgFake, out outcome) {
				snap := f.snapshot(t, "app-blue-4")
				assert.Equal(t, "app-blue", snap.Spec.JobReference.Name)
				require.NotNil(t, snap.Spec.Savepoint.DisposeOnDelete)
				assert.False(t, *snap.Spec.Savepoint.DisposeOnDelete, "the new child restores from it")
				assert.True(t, jobs.OwnedBy(snap, f.bg))
				assert.Equal(t, ctrl.Result{RequeueAfter: bgReschedule}, out.res)
				assert.Equal(t, "Savepointing", condition(out.bg, ConditionBlueGreenProgressing).Reason)
			},
		},
		{
			name: "transitioning, green not ready: nothing touched, looked at again when the grace period ends",
			setup: func(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object {
				bg.Status.BlueGreenState = flinkv1beta1.BlueGreenTransitioningToGreen
				blue := childOf(t, bg, bluegreen.Blue, "", true)
				changedImage(bg)
				recordSpecOf(t, bg)
				withGrace(bg, bgGrace-3*time.Second)
				return []client.Object{blue, childOf(t, bg, bluegreen.Green, "", false)}
			},
			step: bluegreen.Step{Next: flinkv1beta1.BlueGreenTransitioningToGreen, Action: bluegreen.ActionWait, Target: bluegreen.Green},
			check: func(t *testing.T, f *bgFake, out outcome) {
				assert.Equal(t, ctrl.Result{RequeueAfter: 3 * time.Second}, out.res)
				assert.Equal(t, metav1.ConditionTrue, condition(out.bg, ConditionBlueGreenProgressing).Status)
			},
		},
	})
}

func TestBlueGreenActionDeploy(t *testing.T) {
	runBGActionCases(t, []bgActionCase{
		{
			name: "first deployment: blue from the template's initialSavepointPath, the spec recorded",
			setup: func(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object {
				bg.Spec.Template.Spec.Job.InitialSavepointPath = "file:///sp/initial"
				return nil
			},
			step:    bluegreen.Step{Next: flinkv1beta1.BlueGreenTransitioningToBlue, Action: bluegreen.ActionDeploy, Target: bluegreen.Blue},
			created: []string{"FlinkDeployment/app-blue"},
			check: func(t *testing.T, f *bgFake, out outcome) {
				blue := f.child(t, bluegreen.Blue)
				assert.Equal(t, "file:///sp/initial", blue.Spec.Job.InitialSavepointPath)
				assert.Equal(t, "BLUE", blue.Labels[flinkv1beta1.BlueGreenDeploymentTypeLabel])
				assert.Equal(t, "orders", blue.Labels["team"])
				assert.True(t, jobs.OwnedBy(blue, f.bg))
				assert.Equal(t, bgNow.Add(bgGrace).Format(time.RFC3339Nano), out.bg.Status.AbortTimestamp)
				assert.Equal(t, flinkv1beta1.JobStatusReconciling, out.bg.Status.JobStatus.State)
				assert.Equal(t, int64(3), out.bg.Status.ObservedGeneration)
				last, _, err := bluegreen.UnmarshalSpec(out.bg.Status.LastReconciledSpec)
				require.NoError(t, err)
				assert.Equal(t, f.bg.Spec, *last)
				assert.Equal(t, ctrl.Result{RequeueAfter: bgReschedule}, out.res)
				assert.Equal(t, []string{"Normal BlueGreenDeploy Created app-blue from savepoint file:///sp/initial"}, out.events)
			},
		},
		{
			name: "switch after the savepoint: green starts from it, the failure of a former switch is cleared",
			setup: func(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object {
				bg.Status.BlueGreenState = flinkv1beta1.BlueGreenSavepointingBlue
				blue := childOf(t, bg, bluegreen.Blue, "", true)
				recordSpecOf(t, bg)
				changedImage(bg)
				bg.Status.SavepointTriggerID = savepointName(bg, bluegreen.Blue)
				bg.Status.Error = "an earlier failure"
				withGrace(bg, time.Minute)
				return []client.Object{blue, snapshotOf(bg, bluegreen.Blue, flinkv1beta1.SnapshotCompleted, "file:///sp/savepoint-1", "")}
			},
			step:    bluegreen.Step{Next: flinkv1beta1.BlueGreenTransitioningToGreen, Action: bluegreen.ActionDeploy, Target: bluegreen.Green},
			created: []string{"FlinkDeployment/app-green"},
			check: func(t *testing.T, f *bgFake, out outcome) {
				green := f.child(t, bluegreen.Green)
				assert.Equal(t, "///sp/savepoint-1", green.Spec.Job.InitialSavepointPath, "as upstream: the local savepoint without its file: scheme")
				assert.Equal(t, "flink:1.20.1", green.Spec.Image)
				assert.Equal(t, "app-blue-4", out.bg.Status.SavepointTriggerID, "kept: a redeploy of the switch starts from it again")
				assert.Equal(t, bgNow.Add(bgGrace).Format(time.RFC3339Nano), out.bg.Status.AbortTimestamp, "a new grace period for the new child")
				assert.Empty(t, out.bg.Status.Error)
				assert.Equal(t, int64(4), out.bg.Status.ObservedGeneration)
			},
		},
		{
			name: "savepoint redeploy: green starts from initialSavepointPath, not from a savepoint of blue",
			setup: func(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object {
				bg.Status.BlueGreenState = flinkv1beta1.BlueGreenActiveBlue
				blue := childOf(t, bg, bluegreen.Blue, "", true)
				recordSpecOf(t, bg)
				nonce := int64(1)
				bg.Spec.Template.Spec.Job.SavepointRedeployNonce = &nonce
				bg.Spec.Template.Spec.Job.InitialSavepointPath = "file:///sp/chosen"
				bg.Status.SavepointTriggerID = "app-blue-1" // left by an earlier switch
				return []client.Object{blue}
			},
			step:    bluegreen.Step{Next: flinkv1beta1.BlueGreenTransitioningToGreen, Action: bluegreen.ActionDeploy, Target: bluegreen.Green},
			created: []string{"FlinkDeployment/app-green"},
			check: func(t *testing.T, f *bgFake, out outcome) {
				assert.Equal(t, "file:///sp/chosen", f.child(t, bluegreen.Green).Spec.Job.InitialSavepointPath)
				assert.Empty(t, out.bg.Status.SavepointTriggerID)
			},
		},
		{
			name: "the same switch redeployed (new child missing): the grace period running is kept",
			setup: func(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object {
				bg.Status.BlueGreenState = flinkv1beta1.BlueGreenTransitioningToGreen
				blue := childOf(t, bg, bluegreen.Blue, "", true)
				bg.Spec.Template.Spec.Job.UpgradeMode = flinkv1beta1.UpgradeModeStateless
				changedImage(bg)
				recordSpecOf(t, bg)
				withGrace(bg, 4*time.Minute)
				return []client.Object{blue}
			},
			step:    bluegreen.Step{Next: flinkv1beta1.BlueGreenTransitioningToGreen, Action: bluegreen.ActionDeploy, Target: bluegreen.Green},
			created: []string{"FlinkDeployment/app-green"},
			check: func(t *testing.T, f *bgFake, out outcome) {
				assert.Equal(t, bgNow.Add(bgGrace-4*time.Minute).Format(time.RFC3339Nano), out.bg.Status.AbortTimestamp)
			},
		},
		{
			name: "a green left by an aborted switch started from another savepoint: deleted, to be created anew",
			setup: func(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object {
				bg.Status.BlueGreenState = flinkv1beta1.BlueGreenSavepointingBlue
				blue := childOf(t, bg, bluegreen.Blue, "", true)
				oldGreen := childOf(t, bg, bluegreen.Green, "file:///sp/older", false)
				recordSpecOf(t, bg)
				changedImage(bg)
				bg.Status.SavepointTriggerID = savepointName(bg, bluegreen.Blue)
				return []client.Object{blue, oldGreen, snapshotOf(bg, bluegreen.Blue, flinkv1beta1.SnapshotCompleted, "file:///sp/newer", "")}
			},
			step:    bluegreen.Step{Next: flinkv1beta1.BlueGreenTransitioningToGreen, Action: bluegreen.ActionDeploy, Target: bluegreen.Green},
			deleted: []string{"FlinkDeployment/app-green"},
			check: func(t *testing.T, f *bgFake, out outcome) {
				assert.Equal(t, reconciler.RequeueSoon(), out.res)
			},
		},
	})
}

func TestBlueGreenActionDeployRecorded(t *testing.T) {
	runBGActionCases(t, []bgActionCase{{
		name: "a suspend asked for during the switch: green from the recorded template, the suspend not recorded",
		setup: func(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object {
			bg.Status.BlueGreenState = flinkv1beta1.BlueGreenTransitioningToGreen
			blue := childOf(t, bg, bluegreen.Blue, "", true)
			bg.Spec.Template.Spec.Job.UpgradeMode = flinkv1beta1.UpgradeModeStateless
			changedImage(bg)
			recordSpecOf(t, bg)
			withGrace(bg, time.Minute)
			bg.Spec.Template.Spec.Job.State = flinkv1beta1.JobStateSuspended
			bg.Generation++
			return []client.Object{blue}
		},
		step:    bluegreen.Step{Next: flinkv1beta1.BlueGreenTransitioningToGreen, Action: bluegreen.ActionDeployRecorded, Target: bluegreen.Green},
		created: []string{"FlinkDeployment/app-green"},
		check: func(t *testing.T, f *bgFake, out outcome) {
			green := f.child(t, bluegreen.Green)
			assert.Equal(t, "flink:1.20.1", green.Spec.Image)
			assert.NotEqual(t, flinkv1beta1.JobStateSuspended, green.Spec.Job.State)
			assert.Equal(t, int64(4), out.bg.Status.ObservedGeneration, "the suspend (generation 5) is not recorded")
			last, _, err := bluegreen.UnmarshalSpec(out.bg.Status.LastReconciledSpec)
			require.NoError(t, err)
			assert.NotEqual(t, flinkv1beta1.JobStateSuspended, last.Template.Spec.Job.State)
		},
	}})
}

func TestBlueGreenActionPatchActive(t *testing.T) {
	runBGActionCases(t, []bgActionCase{
		{
			name: "suspend: blue suspended in place, the spec recorded",
			setup: func(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object {
				bg.Status.BlueGreenState = flinkv1beta1.BlueGreenActiveBlue
				blue := childOf(t, bg, bluegreen.Blue, "file:///sp/0", true)
				recordSpecOf(t, bg)
				bg.Spec.Template.Spec.Job.State = flinkv1beta1.JobStateSuspended
				bg.Generation++
				return []client.Object{blue}
			},
			step:    bluegreen.Step{Next: flinkv1beta1.BlueGreenActiveBlue, Action: bluegreen.ActionPatchActive, Target: bluegreen.Blue},
			changed: []string{"FlinkDeployment/app-blue"},
			check: func(t *testing.T, f *bgFake, out outcome) {
				blue := f.child(t, bluegreen.Blue)
				assert.Equal(t, flinkv1beta1.JobStateSuspended, blue.Spec.Job.State)
				assert.Equal(t, "file:///sp/0", blue.Spec.Job.InitialSavepointPath)
				assert.Equal(t, flinkv1beta1.JobStatusSuspended, out.bg.Status.JobStatus.State)
				assert.Equal(t, int64(4), out.bg.Status.ObservedGeneration)
				assert.Contains(t, out.events, "Normal BlueGreenPatched Applied the template to the active child app-blue in place")
			},
		},
		{
			name: "suspend during the switch's savepoint: the switch is given up, the savepoint in progress deleted",
			setup: func(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object {
				bg.Status.BlueGreenState = flinkv1beta1.BlueGreenSavepointingGreen
				green := childOf(t, bg, bluegreen.Green, "", true)
				recordSpecOf(t, bg)
				changedImage(bg)
				bg.Spec.Template.Spec.Job.State = flinkv1beta1.JobStateSuspended
				bg.Status.SavepointTriggerID = savepointName(bg, bluegreen.Green)
				withGrace(bg, time.Minute)
				return []client.Object{green, snapshotOf(bg, bluegreen.Green, flinkv1beta1.SnapshotInProgress, "", "")}
			},
			step:    bluegreen.Step{Next: flinkv1beta1.BlueGreenActiveGreen, Action: bluegreen.ActionPatchActive, Target: bluegreen.Green},
			changed: []string{"FlinkDeployment/app-green"},
			deleted: []string{"FlinkStateSnapshot/app-green-4"},
			early:   []string{"FlinkStateSnapshot/app-green-4"}, // before: a restart in between must not find the switch going on
			check: func(t *testing.T, f *bgFake, out outcome) {
				assert.Equal(t, flinkv1beta1.JobStateSuspended, f.child(t, bluegreen.Green).Spec.Job.State)
				assert.Empty(t, out.bg.Status.SavepointTriggerID)
				assert.Empty(t, out.bg.Status.AbortTimestamp)
			},
		},
	})
}

func TestBlueGreenActionTriggerSavepoint(t *testing.T) {
	runBGActionCases(t, []bgActionCase{{
		name: "a stateful change: the savepoint of green recorded, then created",
		setup: func(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object {
			bg.Status.BlueGreenState = flinkv1beta1.BlueGreenActiveGreen
			green := childOf(t, bg, bluegreen.Green, "", true)
			recordSpecOf(t, bg)
			changedImage(bg)
			bg.Status.DeploymentReadyTimestamp = bgNow.Add(-time.Hour).Format(time.RFC3339Nano)
			return []client.Object{green}
		},
		step:    bluegreen.Step{Next: flinkv1beta1.BlueGreenSavepointingGreen, Action: bluegreen.ActionTriggerSavepoint, Target: bluegreen.Green},
		created: []string{"FlinkStateSnapshot/app-green-4"},
		check: func(t *testing.T, f *bgFake, out outcome) {
			assert.Equal(t, "app-green-4", out.bg.Status.SavepointTriggerID)
			assert.Equal(t, bgNow.Add(bgGrace).Format(time.RFC3339Nano), out.bg.Status.AbortTimestamp)
			assert.Empty(t, out.bg.Status.DeploymentReadyTimestamp)
			assert.Equal(t, "app-green", f.snapshot(t, "app-green-4").Spec.JobReference.Name)
			assert.NotEqual(t, int64(4), out.bg.Status.ObservedGeneration, "the spec is recorded when the new child is deployed")
			assert.Equal(t, []string{"Normal BlueGreenSavepoint Savepoint app-green-4 of app-green for the switch to app-blue"}, out.events)
		},
	}})
}

func TestBlueGreenActionRecordReady(t *testing.T) {
	runBGActionCases(t, []bgActionCase{{
		name: "green ready: the time recorded, looked at again after the deletion delay",
		setup: func(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object {
			bg.Status.BlueGreenState = flinkv1beta1.BlueGreenTransitioningToGreen
			blue := childOf(t, bg, bluegreen.Blue, "", true)
			changedImage(bg)
			recordSpecOf(t, bg)
			withGrace(bg, time.Minute)
			return []client.Object{blue, childOf(t, bg, bluegreen.Green, "", true)}
		},
		step: bluegreen.Step{Next: flinkv1beta1.BlueGreenTransitioningToGreen, Action: bluegreen.ActionRecordReady, Target: bluegreen.Green},
		check: func(t *testing.T, f *bgFake, out outcome) {
			assert.Equal(t, bgNow.Format(time.RFC3339Nano), out.bg.Status.DeploymentReadyTimestamp)
			assert.Equal(t, ctrl.Result{RequeueAfter: bgDelay}, out.res)
		},
	}})
}

func TestBlueGreenActionFinalize(t *testing.T) {
	ingress := "Ingress/" + native.IngressName("app")
	runBGActionCases(t, []bgActionCase{
		{
			name: "green active: the switch recorded, the ingress on green, blue deleted",
			setup: func(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object {
				bg.Status.BlueGreenState = flinkv1beta1.BlueGreenTransitioningToGreen
				blue := childOf(t, bg, bluegreen.Blue, "", true)
				changedImage(bg)
				recordSpecOf(t, bg)
				withGrace(bg, time.Minute)
				bg.Status.SavepointTriggerID = savepointName(bg, bluegreen.Blue)
				bg.Status.DeploymentReadyTimestamp = bgNow.Add(-bgDelay).Format(time.RFC3339Nano)
				return []client.Object{blue, childOf(t, bg, bluegreen.Green, "file:///sp/1", true)}
			},
			step:    bluegreen.Step{Next: flinkv1beta1.BlueGreenActiveGreen, Action: bluegreen.ActionFinalize, Target: bluegreen.Green},
			created: []string{ingress},
			deleted: []string{"FlinkDeployment/app-blue"},
			early:   []string{"FlinkDeployment/app-blue"}, // marked retired: a restart after the record still deletes it
			check: func(t *testing.T, f *bgFake, out outcome) {
				st := out.bg.Status
				assert.Empty(t, st.AbortTimestamp+st.DeploymentReadyTimestamp+st.SavepointTriggerID, "the switch's markers are reset")
				assert.Equal(t, "job-GREEN", st.JobStatus.JobID)
				assert.Equal(t, metav1.ConditionTrue, condition(out.bg, ConditionBlueGreenReady).Status)
				assert.Equal(t, flinkconf.RESTServiceName("app-green"), fixtures.IngressBackend(t, f.c, "ns", "app"))
				assert.Equal(t, []string{"Normal BlueGreenSwitched app-green is active (ACTIVE_GREEN)"}, out.events)
			},
		},
		{
			name: "first deployment: blue active, nothing to delete",
			setup: func(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object {
				bg.Status.BlueGreenState = flinkv1beta1.BlueGreenTransitioningToBlue
				recordSpecOf(t, bg)
				withGrace(bg, time.Minute)
				return []client.Object{childOf(t, bg, bluegreen.Blue, "", true)}
			},
			step:    bluegreen.Step{Next: flinkv1beta1.BlueGreenActiveBlue, Action: bluegreen.ActionFinalize, Target: bluegreen.Blue},
			created: []string{ingress},
			check: func(t *testing.T, f *bgFake, out outcome) {
				assert.Equal(t, flinkconf.RESTServiceName("app-blue"), fixtures.IngressBackend(t, f.c, "ns", "app"))
			},
		},
	})
}

func TestBlueGreenActionAbort(t *testing.T) {
	runBGActionCases(t, []bgActionCase{
		{
			name: "green never ready: the failure recorded, green suspended for inspection, blue untouched",
			setup: func(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object {
				bg.Status.BlueGreenState = flinkv1beta1.BlueGreenTransitioningToGreen
				blue := childOf(t, bg, bluegreen.Blue, "", true)
				changedImage(bg)
				recordSpecOf(t, bg)
				withGrace(bg, bgGrace)
				return []client.Object{blue, childOf(t, bg, bluegreen.Green, "", false)}
			},
			step:    bluegreen.Step{Next: flinkv1beta1.BlueGreenActiveBlue, Action: bluegreen.ActionAbort, Target: bluegreen.Green},
			changed: []string{"FlinkDeployment/app-green"},
			check: func(t *testing.T, f *bgFake, out outcome) {
				assert.Equal(t, flinkv1beta1.JobStateSuspended, f.child(t, bluegreen.Green).Spec.Job.State)
				st := out.bg.Status
				assert.Equal(t, flinkv1beta1.JobStatusFailing, st.JobStatus.State)
				assert.Equal(t, "Aborting deployment 'app-green', rolling B/G deployment back to ACTIVE_BLUE: not ready within 10m0s (kubernetes.operator.bluegreen.abort.grace-period)", st.Error)
				assert.Empty(t, st.AbortTimestamp)
				assert.Equal(t, "Failed", condition(out.bg, ConditionBlueGreenReady).Reason)
				assert.Equal(t, []string{"Warning BlueGreenAborted " + st.Error}, out.events)
				assert.Equal(t, ctrl.Result{}, out.res)
			},
		},
		{
			name: "first blue never ready: back to initializing, blue suspended",
			setup: func(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object {
				bg.Status.BlueGreenState = flinkv1beta1.BlueGreenTransitioningToBlue
				recordSpecOf(t, bg)
				withGrace(bg, bgGrace)
				return []client.Object{childOf(t, bg, bluegreen.Blue, "", false)}
			},
			step:    bluegreen.Step{Next: flinkv1beta1.BlueGreenInitializingBlue, Action: bluegreen.ActionAbort, Target: bluegreen.Blue},
			changed: []string{"FlinkDeployment/app-blue"},
			check: func(t *testing.T, f *bgFake, out outcome) {
				assert.Equal(t, flinkv1beta1.JobStateSuspended, f.child(t, bluegreen.Blue).Spec.Job.State)
				assert.Contains(t, out.bg.Status.Error, "rolling B/G deployment back to INITIALIZING_BLUE")
			},
		},
	})
}

func TestBlueGreenActionFail(t *testing.T) {
	runBGActionCases(t, []bgActionCase{
		{
			name: "savepoint failed: blue stays, the failed snapshot deleted, the spec recorded",
			setup: func(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object {
				bg.Status.BlueGreenState = flinkv1beta1.BlueGreenSavepointingBlue
				blue := childOf(t, bg, bluegreen.Blue, "", true)
				recordSpecOf(t, bg)
				changedImage(bg)
				bg.Status.SavepointTriggerID = savepointName(bg, bluegreen.Blue)
				withGrace(bg, time.Minute)
				return []client.Object{blue, snapshotOf(bg, bluegreen.Blue, flinkv1beta1.SnapshotFailed, "", "checkpoint coordinator is shut down")}
			},
			step:    bluegreen.Step{Next: flinkv1beta1.BlueGreenActiveBlue, Action: bluegreen.ActionFail, Target: bluegreen.Blue},
			deleted: []string{"FlinkStateSnapshot/app-blue-4"},
			early:   []string{"FlinkStateSnapshot/app-blue-4"}, // a restart in between only retries the savepoint
			check: func(t *testing.T, f *bgFake, out outcome) {
				st := out.bg.Status
				assert.Equal(t, "Savepoint of 'app-blue' failed, app-blue stays active: checkpoint coordinator is shut down", st.Error)
				assert.Equal(t, flinkv1beta1.JobStatusFailing, st.JobStatus.State)
				assert.Empty(t, st.AbortTimestamp+st.SavepointTriggerID)
				assert.Equal(t, int64(4), st.ObservedGeneration, "recorded: the same spec is not retried in a loop")
				assert.Equal(t, "flink:1.20", f.child(t, bluegreen.Blue).Spec.Image)
				assert.Equal(t, []string{"Warning BlueGreenFailed " + st.Error}, out.events)
			},
		},
		{
			name: "savepoint too slow: a completed snapshot is kept",
			setup: func(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object {
				bg.Status.BlueGreenState = flinkv1beta1.BlueGreenSavepointingGreen
				green := childOf(t, bg, bluegreen.Green, "", true)
				recordSpecOf(t, bg)
				changedImage(bg)
				bg.Status.SavepointTriggerID = savepointName(bg, bluegreen.Green)
				withGrace(bg, bgGrace)
				return []client.Object{green, snapshotOf(bg, bluegreen.Green, flinkv1beta1.SnapshotCompleted, "", "")}
			},
			step: bluegreen.Step{Next: flinkv1beta1.BlueGreenActiveGreen, Action: bluegreen.ActionFail, Target: bluegreen.Green},
			check: func(t *testing.T, f *bgFake, out outcome) {
				assert.Equal(t, "Savepoint of 'app-green' failed, app-green stays active: the savepoint did not complete within 10m0s", out.bg.Status.Error)
			},
		},
	})
}

func TestBlueGreenActionFailNotReady(t *testing.T) {
	runBGActionCases(t, []bgActionCase{{
		name: "a change while blue is not ready: reported and recorded, no child touched",
		setup: func(t *testing.T, bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object {
			bg.Status.BlueGreenState = flinkv1beta1.BlueGreenActiveBlue
			blue := childOf(t, bg, bluegreen.Blue, "", false)
			recordSpecOf(t, bg)
			changedImage(bg)
			return []client.Object{blue}
		},
		step: bluegreen.Step{Next: flinkv1beta1.BlueGreenActiveBlue, Action: bluegreen.ActionFailNotReady, Target: bluegreen.Blue},
		check: func(t *testing.T, f *bgFake, out outcome) {
			st := out.bg.Status
			assert.Equal(t, "Transition to GREEN not possible, current Flink Deployment 'app-blue' is not READY. FAILING 'app'", st.Error)
			assert.Equal(t, flinkv1beta1.JobStatusFailing, st.JobStatus.State)
			assert.Equal(t, int64(4), st.ObservedGeneration)
			assert.Equal(t, []string{"Warning BlueGreenNotReady " + st.Error}, out.events)
		},
	}})
}

// TestBlueGreenUnknownStateIsRefused: a status.blueGreenState this operator does not know (the
// CRD's enum keeps it out, but not under another CRD or a status written by an operator with
// more states) is reported, and neither the state nor a child is changed. Restarting from
// INITIALIZING_BLUE would forget that green serves.
func TestBlueGreenUnknownStateIsRefused(t *testing.T) {
	bg := fakeBlueGreenResource(t)
	bg.Status.BlueGreenState = "PAUSED_GREEN"
	green := childOf(t, bg, bluegreen.Green, "", true)
	recordSpecOf(t, bg)
	changedImage(bg)
	f := newBGFake(t, bg, green)
	before := f.inventory(t)

	for i := 0; i < 2; i++ { // the second reconcile finds the refusal recorded and writes nothing
		_, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(bg)})
		require.NoError(t, err)
	}

	stored := fixtures.GetBlueGreen(t, f.c, "ns", "app")
	assert.Equal(t, flinkv1beta1.FlinkBlueGreenDeploymentState("PAUSED_GREEN"), stored.Status.BlueGreenState, "the state is kept")
	assert.Contains(t, stored.Status.Error, `status.blueGreenState: "PAUSED_GREEN" is not a blue/green state (allowed: ACTIVE_BLUE,`)
	ready := condition(stored, ConditionBlueGreenReady)
	assert.Equal(t, ReasonInvalid, ready.Reason)
	assert.Equal(t, stored.Status.Error, ready.Message)
	assert.Equal(t, before, f.inventory(t), "no child, snapshot or ingress created, changed or deleted")
	assert.Equal(t, int64(3), stored.Status.ObservedGeneration, "the new spec is not recorded")
	assert.Len(t, f.drainEvents(), 1, "reported once")
}

// TestBlueGreenRefusalIsWrittenOnce: a refusal that comes from the Ingress (one of another owner
// under the resource's Ingress name, a template that cannot be built) is written once. A reconcile
// that finds it again writes nothing: each status write is a watch event and another reconcile,
// so writing it anew every time would reconcile in a loop.
func TestBlueGreenRefusalIsWrittenOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object
		want  string
	}{
		{"an Ingress of another owner", func(bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object {
			return []client.Object{&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: bg.Namespace, Name: native.IngressName(bg.Name)}}}
		}, "Ingress " + native.IngressName("app") + " exists and does not belong to this FlinkBlueGreenDeployment"},
		{"an Ingress template that cannot be built", func(bg *flinkv1beta1.FlinkBlueGreenDeployment) []client.Object {
			bg.Spec.Ingress.Template = "{{job}}.example.com"
			return nil
		}, `spec.ingress.template: "{{job}}.example.com" has placeholders other than {{name}} and {{namespace}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bg := fakeBlueGreenResource(t)
			bg.Status.BlueGreenState = flinkv1beta1.BlueGreenActiveBlue
			blue := childOf(t, bg, bluegreen.Blue, "", true)
			objs := append(tc.setup(bg), blue)
			recordSpecOf(t, bg)
			// Conditions of an older generation: the refusal's are for this one.
			bg.Status.Conditions = []metav1.Condition{{Type: ConditionBlueGreenProgressing, Status: metav1.ConditionFalse, Reason: "Settled",
				Message: "No switch in progress", ObservedGeneration: bg.Generation - 1, LastTransitionTime: metav1.Now()}}
			f := newBGFake(t, bg, objs...)
			reconcile := func() *flinkv1beta1.FlinkBlueGreenDeployment {
				_, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(bg)})
				require.NoError(t, err)
				return fixtures.GetBlueGreen(t, f.c, bg.Namespace, bg.Name)
			}
			first := reconcile()
			assert.Equal(t, tc.want, first.Status.Error)
			assert.Equal(t, ReasonInvalid, condition(first, ConditionBlueGreenReady).Reason)
			assert.Equal(t, "WaitingForUser", condition(first, ConditionBlueGreenProgressing).Reason)
			for _, c := range first.Status.Conditions {
				assert.Equal(t, first.Generation, c.ObservedGeneration, "%s is for the generation refused", c.Type)
			}
			for i := 0; i < 3; i++ {
				again := reconcile()
				assert.Equal(t, first.ResourceVersion, again.ResourceVersion, "reconcile %d wrote the status again", i+2)
			}
			assert.Len(t, f.drainEvents(), 1, "reported once")
		})
	}
}
