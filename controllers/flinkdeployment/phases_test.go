package flinkdeployment

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/log"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/pkg/validation"
	"github.com/flink-operator/flink-operator/test/fakeflink"
)

// The phases of a FlinkDeployment reconcile, each run alone on a controller-runtime fake client
// with test/fakeflink as the JobManager: no manager, no API server, no polling. A test sets up
// the status a reconcile would find, runs one phase (or the phase list) once, and asserts the
// requests the JobManager received and the objects and status written.

// haConf turns Kubernetes HA on.
var haConf = map[string]string{"high-availability.type": "kubernetes", "high-availability.storageDir": "file:///ha"}

// phaseWorld is one test's fake API server, fake JobManager and reconciler.
type phaseWorld struct {
	t      *testing.T
	c      client.Client
	flink  *fakeflink.Server
	r      *FlinkDeploymentReconciler
	events *record.FakeRecorder
	dep    *flinkv1beta1.FlinkDeployment
	// jmDeletions counts the deletions of the JobManager Deployment asked of the API server.
	jmDeletions int
	// atApply is the stored status of the resource each time its JobManager Deployment was
	// applied: what an operator restarted right then would find.
	atApply []flinkv1beta1.FlinkDeploymentStatus
}

// deployedResource is a FlinkDeployment whose spec (with the upgrade mode and configuration
// given) is deployed, its job RUNNING on a ready JobManager, and the status says so.
func deployedResource(t *testing.T, mode flinkv1beta1.UpgradeMode, conf map[string]string) *flinkv1beta1.FlinkDeployment {
	t.Helper()
	dep := fixtures.NewDeployment(t, "phases", "orders")
	dep.UID, dep.Generation, dep.Finalizers = "2b2c1a70-5b4e-4f59-9f43-3a4c6e1f0001", 1, []string{DeploymentFinalizer}
	dep.Spec.Job.UpgradeMode = mode
	flat, err := dep.Spec.FlinkConfiguration.Flatten()
	require.NoError(t, err)
	for k, v := range conf {
		flat[k] = v
	}
	dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(flat)
	raw, err := flinkv1beta1.EncodeReconciledSpec(dep.Spec, false)
	require.NoError(t, err)
	dep.Status.JobManagerDeploymentStatus = flinkv1beta1.JobManagerReady
	dep.Status.JobStatus = flinkv1beta1.JobStatus{JobID: fixtures.PhaseJobID, State: flinkv1beta1.JobStatusRunning}
	dep.Status.ReconciliationStatus = flinkv1beta1.ReconciliationStatus{LastReconciledSpec: raw, LastStableSpec: raw,
		State: flinkv1beta1.ReconciliationDeployed, ReconciliationTimestamp: time.Now().Add(-time.Hour).UnixMilli()}
	dep.Status.ObservedGeneration = 1
	return dep
}

// newPhaseWorld stores dep (with its cluster's objects when withCluster, and HA metadata of its
// job when withHA) in a fake API server, and a reconciler whose JobManager is a fake Flink
// running the job.
func newPhaseWorld(t *testing.T, dep *flinkv1beta1.FlinkDeployment, withCluster, withHA bool) *phaseWorld {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, flinkv1beta1.AddToScheme(scheme))
	w := &phaseWorld{t: t, dep: dep}
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&flinkv1beta1.FlinkDeployment{}, &appsv1.Deployment{}).
		WithObjects(dep).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*appsv1.Deployment); ok && w.r != nil {
				stored := &flinkv1beta1.FlinkDeployment{}
				if err := c.Get(ctx, client.ObjectKeyFromObject(dep), stored); err == nil {
					w.atApply = append(w.atApply, stored.Status)
				}
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if _, ok := obj.(*appsv1.Deployment); ok {
				w.jmDeletions++
			}
			return c.Delete(ctx, obj, opts...)
		},
	}).Build()
	ctx := context.Background()
	if withCluster {
		running := dep.DeepCopy()
		cluster, err := native.Build(running, flinkconf.Defaults{}, flinkconf.BuildOptions{JobID: fixtures.PhaseJobID})
		require.NoError(t, err)
		require.NoError(t, native.Apply(ctx, c, c, cluster))
	}
	if withHA {
		for _, cm := range []*corev1.ConfigMap{
			{ObjectMeta: metav1.ObjectMeta{Namespace: dep.Namespace, Name: dep.Name + "-" + fixtures.PhaseJobID + "-config-map", Labels: native.HALabels(dep.Name)},
				Data: map[string]string{"counter": "2", "checkpointID-0000000000000000001": "pointer"}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: dep.Namespace, Name: native.HAClusterConfigMapName(dep.Name), Labels: native.HALabels(dep.Name)},
				Data: map[string]string{"jobGraph-" + fixtures.PhaseJobID: "graph"}},
		} {
			require.NoError(t, c.Create(ctx, cm))
		}
	}
	flink := fakeflink.New(t)
	flink.SetJob(fixtures.PhaseJobID, string(dep.Status.JobStatus.State))
	events := record.NewFakeRecorder(100)
	r := &FlinkDeploymentReconciler{Client: c, Scheme: scheme, Recorder: events, Validator: &validation.Validator{},
		Flink: &clients.Factory{URLTemplate: flink.URL, Timeout: 2 * time.Second}, Intervals: fixtures.FastIntervals()}
	w.c, w.flink, w.r, w.events = c, flink, r, events
	return w
}

// pass is the phases' input of one reconcile, read from the fake API server: the stored
// resource, reconciled to its own spec unless desired is given.
func (w *phaseWorld) pass(desired *flinkv1beta1.FlinkDeploymentSpec) *pass {
	w.t.Helper()
	s := NewScope(w.stored())
	if desired == nil {
		desired = s.dep.Spec.DeepCopy()
	}
	conf, err := w.r.config(s, desired)
	require.NoError(w.t, err)
	return &pass{scope: s, desired: desired, conf: conf}
}

func (w *phaseWorld) stored() *flinkv1beta1.FlinkDeployment {
	w.t.Helper()
	got := &flinkv1beta1.FlinkDeployment{}
	require.NoError(w.t, w.c.Get(context.Background(), client.ObjectKeyFromObject(w.dep), got))
	return got
}

// changes are the requests that change something the JobManager received (reads left out).
func (w *phaseWorld) changes() []string { return fixtures.Changes(w.flink) }

// jobManager is the cluster's JobManager Deployment, nil when there is none.
func (w *phaseWorld) jobManager() *appsv1.Deployment {
	jm := &appsv1.Deployment{}
	err := w.c.Get(context.Background(), client.ObjectKey{Namespace: w.dep.Namespace, Name: native.JobManagerDeploymentName(w.dep.Name)}, jm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(w.t, err)
	return jm
}

// flinkConfig is the Flink configuration file the cluster's pods mount ("" without one).
func (w *phaseWorld) flinkConfig() string {
	cm := &corev1.ConfigMap{}
	if err := w.c.Get(context.Background(), client.ObjectKey{Namespace: w.dep.Namespace, Name: native.ConfigMapName(w.dep.Name)}, cm); err != nil {
		return ""
	}
	return cm.Data["config.yaml"]
}

// haConfigMaps are the names of the cluster's HA ConfigMaps.
func (w *phaseWorld) haConfigMaps() []string {
	w.t.Helper()
	list, err := native.HAConfigMaps(context.Background(), w.c, w.dep.Namespace, w.dep.Name)
	require.NoError(w.t, err)
	var names []string
	for _, cm := range list {
		names = append(names, cm.Name)
	}
	return names
}

// recorded are the events recorded so far, as "Type Reason Message".
func (w *phaseWorld) recorded() []string { return fixtures.Recorded(w.events) }

func ctrlResult(after time.Duration) ctrl.Result { return ctrl.Result{RequeueAfter: after} }

// withParallelism is the resource's spec with another job parallelism (a spec change that
// restarts the job).
func withParallelism(dep *flinkv1beta1.FlinkDeployment, parallelism int32) *flinkv1beta1.FlinkDeploymentSpec {
	spec := dep.Spec.DeepCopy()
	spec.Job.Parallelism = parallelism
	return spec
}

// TestRunPhases: the runner stops at the first phase that acts or fails, and merges the
// looks-again of the phases that let the reconcile go on (the soonest wins).
func TestRunPhases(t *testing.T) {
	errBoom := apierrors.NewBadRequest("boom")
	step := func(name string, out jobs.PhaseResult, err error, ran *[]string) phase {
		return phase{Name: name, Run: func(context.Context, *pass) (jobs.PhaseResult, error) { *ran = append(*ran, name); return out, err }}
	}
	tests := []struct {
		name    string
		results []jobs.PhaseResult
		errs    []error
		wantRan []string
		want    time.Duration
		wantErr bool
	}{
		{name: "all go on: soonest look wins", results: []jobs.PhaseResult{jobs.NextWithin(time.Minute), jobs.NextWithin(time.Second), jobs.NextWithin(time.Hour), jobs.Next()},
			errs: []error{nil, nil, nil, nil}, wantRan: []string{"0", "1", "2", "3"}, want: time.Second},
		{name: "acting ends it with its result", results: []jobs.PhaseResult{jobs.NextWithin(time.Second), jobs.Acted(ctrlResult(time.Hour)), jobs.NextWithin(time.Millisecond)},
			errs: []error{nil, nil, nil}, wantRan: []string{"0", "1"}, want: time.Hour},
		{name: "an error ends it", results: []jobs.PhaseResult{jobs.NextWithin(time.Second), jobs.Next(), jobs.Next()},
			errs: []error{nil, errBoom, nil}, wantRan: []string{"0", "1"}, wantErr: true},
		{name: "a negative look is none", results: []jobs.PhaseResult{jobs.NextWithin(-time.Second), jobs.NextWithin(time.Minute)},
			errs: []error{nil, nil}, wantRan: []string{"0", "1"}, want: time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ran []string
			var phases []phase
			for i := range tt.results {
				phases = append(phases, step(string(rune('0'+i)), tt.results[i], tt.errs[i], &ran))
			}
			res, err := jobs.RunPhases(context.Background(), &pass{}, phases)
			assert.Equal(t, tt.wantRan, ran)
			if tt.wantErr {
				require.ErrorIs(t, err, errBoom)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, res.RequeueAfter)
		})
	}
}

// TestRollbackPhase: a deployment not ready within the readiness timeout after a change is
// rolled back to its last stable spec through its HA metadata, when it can be.
func TestRollbackPhase(t *testing.T) {
	rollbackConf := map[string]string{"kubernetes.operator.deployment.rollback.enabled": "true",
		"kubernetes.operator.deployment.readiness.timeout": "1 min"}
	tests := []struct {
		name      string
		ha        bool
		changedAt time.Duration // how long ago the failed spec was deployed
		// want
		acted      bool
		state      flinkv1beta1.ReconciliationState
		errReason  flinkv1beta1.StatusErrorReason
		restarted  bool // the stable spec's cluster replaced the failed one
		lookWithin time.Duration
	}{
		{name: "not ready past the timeout, with HA metadata: rolled back", ha: true, changedAt: 2 * time.Minute,
			acted: true, state: flinkv1beta1.ReconciliationRolledBack, restarted: true},
		{name: "no HA: not possible, said once", ha: false, changedAt: 2 * time.Minute,
			state: flinkv1beta1.ReconciliationDeployed, errReason: flinkv1beta1.ErrorReasonRollbackFailed},
		{name: "within the timeout: looked at again when it ends", ha: true, changedAt: 10 * time.Second,
			state: flinkv1beta1.ReconciliationDeployed, lookWithin: 50 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf := map[string]string{}
			for k, v := range rollbackConf {
				conf[k] = v
			}
			if tt.ha {
				for k, v := range haConf {
					conf[k] = v
				}
			}
			dep := deployedResource(t, flinkv1beta1.UpgradeModeLastState, conf)
			// The stable spec ran with parallelism 1; the failed one (deployed now) asks for 2 and
			// its job keeps restarting.
			stable := dep.Spec.DeepCopy()
			stable.Job.Parallelism = 1
			rawStable, err := flinkv1beta1.EncodeReconciledSpec(*stable, false)
			require.NoError(t, err)
			failedRaw := dep.Status.ReconciliationStatus.LastReconciledSpec
			dep.Status.ReconciliationStatus.LastStableSpec = rawStable
			dep.Status.ReconciliationStatus.ReconciliationTimestamp = time.Now().Add(-tt.changedAt).UnixMilli()
			dep.Status.JobStatus.State = flinkv1beta1.JobStatusRestarting
			w := newPhaseWorld(t, dep, true, tt.ha)
			require.NotNil(t, w.jobManager())

			p := w.pass(nil)
			out, err := w.r.rollbackNotReady(context.Background(), p)
			require.NoError(t, err)
			require.NoError(t, w.r.finish(context.Background(), p.scope, nil))
			assert.Equal(t, tt.acted, out.Done)
			st := w.stored().Status
			assert.Equal(t, tt.state, st.ReconciliationStatus.State)
			assert.Equal(t, tt.errReason, flinkv1beta1.ErrorReason(st.Error), "status.error: %s", st.Error)
			assert.Empty(t, w.changes(), "a last-state rollback asks nothing of the JobManager")
			if tt.lookWithin > 0 {
				assert.InDelta(t, tt.lookWithin.Seconds(), out.Result.RequeueAfter.Seconds(), 5)
			}
			jm := w.jobManager()
			if !tt.restarted {
				require.NotNil(t, jm)
				assert.Zero(t, w.jmDeletions, "the cluster is left alone")
				return
			}
			require.NotNil(t, jm, "the stable spec is deployed")
			assert.Equal(t, 1, w.jmDeletions, "the failed spec's JobManager was deleted")
			assert.Contains(t, w.flinkConfig(), `parallelism.default: "1"`, "the stable spec's parallelism")
			assert.Contains(t, w.flinkConfig(), "$internal.pipeline.job-id: "+fixtures.PhaseJobID, "the same job id, to restore from HA")
			assert.NotEmpty(t, w.haConfigMaps(), "HA metadata kept")
			assert.Equal(t, failedRaw, st.ReconciliationStatus.LastReconciledSpec, "the failed spec stays the last reconciled one")
			assert.True(t, fixtures.EventWithReason(w.recorded(), ReasonRollback))
		})
	}
}

// TestRecoverJobManagerPhase: a missing JobManager Deployment is deployed again, restoring the
// job's HA metadata; without state to restore, nothing is deployed and the user is told.
func TestRecoverJobManagerPhase(t *testing.T) {
	tests := []struct {
		name     string
		mode     flinkv1beta1.UpgradeMode
		conf     map[string]string
		ha       bool
		jobState flinkv1beta1.JobStatusState
		// want
		acted     bool
		deployed  bool
		errReason flinkv1beta1.StatusErrorReason
	}{
		{name: "last-state with HA metadata: redeployed from it", mode: flinkv1beta1.UpgradeModeLastState, conf: haConf, ha: true,
			jobState: flinkv1beta1.JobStatusRunning, acted: true, deployed: true},
		{name: "no HA metadata, no savepoint: manual restore required", mode: flinkv1beta1.UpgradeModeSavepoint,
			jobState: flinkv1beta1.JobStatusRunning, acted: true, errReason: flinkv1beta1.ErrorReasonManualRestoreRequired},
		{name: "recovery disabled: left alone", mode: flinkv1beta1.UpgradeModeLastState, ha: true,
			conf:     map[string]string{"kubernetes.operator.jm-deployment-recovery.enabled": "false", "high-availability.type": "kubernetes", "high-availability.storageDir": "file:///ha"},
			jobState: flinkv1beta1.JobStatusRunning},
		{name: "the job had finished: nothing to recover", mode: flinkv1beta1.UpgradeModeLastState, conf: haConf, ha: true,
			jobState: flinkv1beta1.JobStatusFinished},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dep := deployedResource(t, tt.mode, tt.conf)
			dep.Status.JobManagerDeploymentStatus = flinkv1beta1.JobManagerMissing
			dep.Status.JobStatus.State = tt.jobState
			w := newPhaseWorld(t, dep, false, tt.ha)

			p := w.pass(nil)
			out, err := w.r.recoverJobManager(context.Background(), p)
			require.NoError(t, err)
			require.NoError(t, w.r.finish(context.Background(), p.scope, nil))
			assert.Equal(t, tt.acted, out.Done)
			st := w.stored().Status
			assert.Equal(t, tt.errReason, flinkv1beta1.ErrorReason(st.Error), "status.error: %s", st.Error)
			assert.Empty(t, w.changes(), "nothing is asked of a JobManager that is gone")
			jm := w.jobManager()
			if !tt.deployed {
				assert.Nil(t, jm, "nothing deployed")
				assert.False(t, fixtures.EventWithReason(w.recorded(), ReasonRecoverDeployment))
				return
			}
			require.NotNil(t, jm, "the JobManager Deployment is back")
			assert.Equal(t, flinkv1beta1.ReconciliationDeployed, st.ReconciliationStatus.State)
			assert.Equal(t, flinkv1beta1.JobManagerDeploying, st.JobManagerDeploymentStatus)
			assert.Equal(t, fixtures.PhaseJobID, st.JobStatus.JobID, "the job id is kept: HA metadata is found by it")
			assert.Contains(t, w.flinkConfig(), "$internal.pipeline.job-id: "+fixtures.PhaseJobID)
			assert.Contains(t, w.haConfigMaps(), dep.Name+"-"+fixtures.PhaseJobID+"-config-map", "the checkpoint pointers are kept")
			require.Len(t, w.atApply, 1)
			assert.Equal(t, flinkv1beta1.ReconciliationUpgrading, w.atApply[0].ReconciliationStatus.State,
				"UPGRADING was written before the JobManager was applied")
			assert.Equal(t, fixtures.PhaseJobID, w.atApply[0].JobStatus.JobID)
			assert.True(t, fixtures.EventWithReason(w.recorded(), ReasonRecoverDeployment))
		})
	}
}

// TestRestartFailedPhase: a FAILED job is restarted with kubernetes.operator.job.restart.failed,
// from its last savepoint, and left FAILED without it.
func TestRestartFailedPhase(t *testing.T) {
	const lastSavepoint = "file:///sp/savepoint-0123-last"
	tests := []struct {
		name    string
		restart string
		// want
		acted bool
	}{
		{name: "restart.failed: restarted from the last savepoint", restart: "true", acted: true},
		{name: "restart.failed off: left FAILED", restart: "false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dep := deployedResource(t, flinkv1beta1.UpgradeModeSavepoint, map[string]string{"kubernetes.operator.job.restart.failed": tt.restart})
			dep.Status.JobStatus.State = flinkv1beta1.JobStatusFailed
			dep.Status.JobStatus.SavepointInfo = &flinkv1beta1.SavepointInfo{LastSavepoint: &flinkv1beta1.Savepoint{Location: lastSavepoint}}
			w := newPhaseWorld(t, dep, true, false)

			p := w.pass(nil)
			out, err := w.r.restartFailed(context.Background(), p)
			require.NoError(t, err)
			require.NoError(t, w.r.finish(context.Background(), p.scope, nil))
			assert.Equal(t, tt.acted, out.Done)
			assert.Empty(t, w.changes(), "a FAILED job is not stopped")
			st := w.stored().Status
			if !tt.acted {
				assert.NotNil(t, w.jobManager())
				assert.Zero(t, w.jmDeletions, "the cluster is left alone")
				assert.Equal(t, flinkv1beta1.JobStatusFailed, st.JobStatus.State)
				return
			}
			jm := w.jobManager()
			require.NotNil(t, jm)
			assert.Equal(t, 1, w.jmDeletions, "the failed job's JobManager was deleted")
			assert.Equal(t, lastSavepoint, st.JobStatus.UpgradeSavepointPath)
			assert.Contains(t, w.flinkConfig(), "execution.savepoint.path: "+lastSavepoint, "the job restores its last savepoint")
			assert.Equal(t, flinkv1beta1.ReconciliationDeployed, st.ReconciliationStatus.State)
			assert.Equal(t, flinkv1beta1.JobStatusReconciling, st.JobStatus.State)
			assert.True(t, fixtures.EventWithReason(w.recorded(), jobs.ReasonRestartFailed))
		})
	}
}

// TestUpgradeStopPhases: a spec change of a running job goes through the phase list: the change
// is recorded (write-ahead), then the job is stopped as its upgrade mode says (jobStop), and the
// new spec deployed restoring what the stop kept. Each reconcile is one run of the phases on the
// status the previous one wrote.
func TestUpgradeStopPhases(t *testing.T) {
	tests := []struct {
		name string
		mode flinkv1beta1.UpgradeMode
		conf map[string]string
		ha   bool
		// want: the JobManager's requests that change something, by reconcile; what the new
		// cluster restores ("" none, "savepoint" the stop's savepoint, "last-state" HA).
		requests [][]string
		restore  string
	}{
		{name: "savepoint: stop-with-savepoint, restored", mode: flinkv1beta1.UpgradeModeSavepoint,
			requests: [][]string{{"POST /jobs/" + fixtures.PhaseJobID + "/stop"}, nil, nil}, restore: "savepoint"},
		{name: "stateless: stops with its cluster, nothing restored", mode: flinkv1beta1.UpgradeModeStateless,
			requests: [][]string{nil}, restore: ""},
		{name: "last-state with HA: nothing asked, HA metadata restored", mode: flinkv1beta1.UpgradeModeLastState, conf: haConf, ha: true,
			requests: [][]string{nil}, restore: "last-state"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dep := deployedResource(t, tt.mode, tt.conf)
			w := newPhaseWorld(t, dep, true, tt.ha)

			var seen int
			for i, want := range tt.requests {
				p := w.pass(withParallelism(w.stored(), 4))
				res, err := jobs.RunPhases(context.Background(), p, w.r.specPhases())
				require.NoError(t, err, "reconcile %d", i)
				require.NoError(t, w.r.finish(context.Background(), p.scope, nil))
				assert.Positive(t, res.RequeueAfter, "reconcile %d looks again", i)
				all := w.changes()
				assert.Equal(t, want, append([]string(nil), all[seen:]...), "reconcile %d: requests to the JobManager", i)
				seen = len(all)
			}
			st := w.stored().Status
			jm := w.jobManager()
			require.NotNil(t, jm, "the new spec is deployed")
			assert.Equal(t, 1, w.jmDeletions, "the old JobManager was deleted")
			assert.Equal(t, flinkv1beta1.ReconciliationDeployed, st.ReconciliationStatus.State)
			assert.Contains(t, w.flinkConfig(), `parallelism.default: "4"`, "the new spec")
			require.Len(t, w.atApply, 1, "the new cluster is applied once")
			written := w.atApply[0]
			assert.Equal(t, flinkv1beta1.ReconciliationUpgrading, written.ReconciliationStatus.State, "write-ahead: UPGRADING before the apply")
			assert.Equal(t, st.JobStatus.JobID, written.JobStatus.JobID, "write-ahead: the job id deployed was recorded first")
			assert.Equal(t, st.JobStatus.UpgradeSavepointPath, written.JobStatus.UpgradeSavepointPath, "write-ahead: the restore path was recorded first")
			switch tt.restore {
			case "savepoint":
				stops := w.flink.Stops()
				require.Len(t, stops, 1)
				path := w.flink.SavepointLocation(fixtures.PhaseJobID, stops[0])
				assert.Equal(t, path, st.JobStatus.UpgradeSavepointPath)
				assert.Contains(t, w.flinkConfig(), "execution.savepoint.path: "+path)
				assert.NotEqual(t, fixtures.PhaseJobID, st.JobStatus.JobID, "a savepoint restore runs under a new job id")
			case "last-state":
				assert.Equal(t, fixtures.PhaseJobID, st.JobStatus.JobID, "HA metadata is found by the job id")
				assert.Contains(t, w.haConfigMaps(), dep.Name+"-"+fixtures.PhaseJobID+"-config-map")
				assert.Contains(t, w.flinkConfig(), "execution.savepoint.path: "+flinkv1beta1.LastStateSentinelPath)
			default:
				assert.NotContains(t, w.flinkConfig(), "execution.savepoint.path")
				assert.Empty(t, w.haConfigMaps())
			}
		})
	}
}

// TestPendingStopIsFollowedCloselyPhase: while the upgrade's stop-with-savepoint is pending,
// the reconcile looks again after a fraction of a second (jobs.Recheck), not after the
// progress-check interval: a small job's savepoint completes within a second, and the
// upgrade would otherwise wait the whole interval for nothing.
func TestPendingStopIsFollowedCloselyPhase(t *testing.T) {
	dep := deployedResource(t, flinkv1beta1.UpgradeModeSavepoint, nil)
	w := newPhaseWorld(t, dep, true, false)
	w.r.Intervals.ProgressCheck = 10 * time.Second
	w.flink.SetAutoComplete(false)
	for i := range 2 { // the reconcile that triggers the stop, then one that finds it pending
		p := w.pass(withParallelism(w.stored(), 4))
		res, err := jobs.RunPhases(context.Background(), p, w.r.specPhases())
		require.NoError(t, err, "reconcile %d", i)
		require.NoError(t, w.r.finish(context.Background(), p.scope, nil))
		require.Len(t, w.flink.StopsOf(fixtures.PhaseJobID), 1, "reconcile %d: one stop-with-savepoint", i)
		assert.Positive(t, res.RequeueAfter, "reconcile %d", i)
		assert.LessOrEqual(t, res.RequeueAfter, time.Second, "reconcile %d looks again within a second, not after the progress check", i)
	}
	w.flink.CompleteSavepoint(fixtures.PhaseJobID, w.flink.StopsOf(fixtures.PhaseJobID)[0], "")
	p := w.pass(withParallelism(w.stored(), 4))
	_, err := jobs.RunPhases(context.Background(), p, w.r.specPhases())
	require.NoError(t, err)
	require.NoError(t, w.r.finish(context.Background(), p.scope, nil))
	assert.Equal(t, w.flink.SavepointLocation(fixtures.PhaseJobID, w.flink.StopsOf(fixtures.PhaseJobID)[0]),
		w.stored().Status.JobStatus.UpgradeSavepointPath, "the completed stop is what the new job restores")
}

// unhealthy is the health check's record of a job found unhealthy.
func unhealthy(dep *flinkv1beta1.FlinkDeployment) {
	dep.Status.ClusterInfo = map[string]string{ClusterInfoHealthKey: `{"numRestarts":9,"healthy":false,"reason":"9 restarts within 2m0s"}`}
}

// TestRestartUnhealthyPhase: a job the health check found unhealthy is restarted from its HA
// metadata (its cluster deleted, HA kept, the same spec recorded as the upgrade target); one
// whose state would be lost is left as it is, and the user told.
func TestRestartUnhealthyPhase(t *testing.T) {
	tests := []struct {
		name string
		mode flinkv1beta1.UpgradeMode
		conf map[string]string
		ha   bool
		// want
		acted     bool
		errReason flinkv1beta1.StatusErrorReason
		haKept    bool
	}{
		{name: "last-state with HA metadata: restarted from it", mode: flinkv1beta1.UpgradeModeLastState, conf: haConf, ha: true,
			acted: true, haKept: true},
		{name: "stateless: restarted from nothing", mode: flinkv1beta1.UpgradeModeStateless, conf: haConf, ha: true, acted: true},
		{name: "savepoint without HA: state would be lost, not restarted", mode: flinkv1beta1.UpgradeModeSavepoint,
			errReason: flinkv1beta1.ErrorReasonUnhealthyJob},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dep := deployedResource(t, tt.mode, tt.conf)
			unhealthy(dep)
			w := newPhaseWorld(t, dep, true, tt.ha)

			p := w.pass(nil)
			out, err := w.r.restartUnhealthy(context.Background(), p)
			require.NoError(t, err)
			require.NoError(t, w.r.finish(context.Background(), p.scope, nil))
			assert.Equal(t, tt.acted, out.Done)
			assert.Empty(t, w.changes(), "the JobManager is not asked: its cluster goes")
			st := w.stored().Status
			assert.Equal(t, tt.errReason, flinkv1beta1.ErrorReason(st.Error), "status.error: %s", st.Error)
			if !tt.acted {
				assert.Equal(t, fixtures.FastIntervals().Reconcile, out.Result.RequeueAfter, "looked at again at the reconcile interval")
				assert.Zero(t, w.jmDeletions, "the cluster is left alone")
				assert.Equal(t, flinkv1beta1.ReconciliationDeployed, st.ReconciliationStatus.State)
				return
			}
			assert.Equal(t, 1, w.jmDeletions, "the unhealthy job's JobManager is deleted")
			assert.Equal(t, flinkv1beta1.ReconciliationUpgrading, st.ReconciliationStatus.State, "the upgrade steps deploy it again")
			assert.Equal(t, flinkv1beta1.JobStatusReconciling, st.JobStatus.State, "not RUNNING: no savepoint is attempted")
			assert.NotContains(t, st.ClusterInfo, ClusterInfoHealthKey, "the health baseline starts again")
			assert.Equal(t, tt.haKept, len(w.haConfigMaps()) > 0, "HA metadata kept: %v", w.haConfigMaps())
			assert.True(t, fixtures.EventWithReason(w.recorded(), jobs.ReasonRestartFailed))
		})
	}
}

// TestShutdownTTLPhase: the JobManager of a job that ended goes once
// kubernetes.operator.jm-deployment.shutdown-ttl has passed, its HA metadata kept.
func TestShutdownTTLPhase(t *testing.T) {
	tests := []struct {
		name      string
		endedAgo  time.Duration
		unhealthy bool
		// want
		acted      bool
		lookWithin time.Duration
	}{
		{name: "past the TTL: removed", endedAgo: 2 * time.Minute, acted: true},
		{name: "within the TTL: looked at again when it ends", endedAgo: 10 * time.Second, lookWithin: 50 * time.Second},
		{name: "unhealthy and not restarted: kept", endedAgo: 2 * time.Minute, unhealthy: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dep := deployedResource(t, flinkv1beta1.UpgradeModeLastState, map[string]string{"kubernetes.operator.jm-deployment.shutdown-ttl": "1 min",
				"high-availability.type": "kubernetes", "high-availability.storageDir": "file:///ha"})
			dep.Status.JobStatus.State = flinkv1beta1.JobStatusFinished
			dep.Status.JobStatus.UpdateTime = strconv.FormatInt(time.Now().Add(-tt.endedAgo).UnixMilli(), 10)
			if tt.unhealthy {
				unhealthy(dep)
			}
			w := newPhaseWorld(t, dep, true, true)

			p := w.pass(nil)
			out, err := w.r.shutdownAfterTTL(context.Background(), p)
			require.NoError(t, err)
			require.NoError(t, w.r.finish(context.Background(), p.scope, nil))
			assert.Equal(t, tt.acted, out.Done)
			assert.Empty(t, w.changes())
			assert.NotEmpty(t, w.haConfigMaps(), "HA metadata kept")
			st := w.stored().Status
			if !tt.acted {
				assert.NotNil(t, w.jobManager())
				assert.Zero(t, w.jmDeletions)
				if tt.lookWithin > 0 {
					assert.InDelta(t, tt.lookWithin.Seconds(), out.Result.RequeueAfter.Seconds(), 5)
				}
				return
			}
			assert.Nil(t, w.jobManager(), "the JobManager Deployment is gone")
			assert.Equal(t, flinkv1beta1.JobManagerMissing, st.JobManagerDeploymentStatus)
			assert.Equal(t, flinkv1beta1.JobStatusFinished, st.JobStatus.State)
			assert.True(t, fixtures.EventWithReason(w.recorded(), reconciler.ReasonCleanup))
		})
	}
}

// TestDeletionPhases: deleting a FlinkDeployment takes a savepoint first when asked, waits for
// a session cluster's FlinkSessionJobs, then deletes the cluster with its HA metadata and lets
// the resource go. Each reconcile is one cleanup on what the previous one wrote.
func TestDeletionPhases(t *testing.T) {
	tests := []struct {
		name        string
		conf        map[string]string
		session     bool
		sessionJobs bool
		// want
		requests   []string
		reconciles int  // until the resource is gone
		kept       bool // still there after 5 reconciles
	}{
		{name: "savepoint on deletion: stop-with-savepoint, then gone", conf: map[string]string{"kubernetes.operator.job.savepoint-on-deletion": "true"},
			requests: []string{"POST /jobs/" + fixtures.PhaseJobID + "/stop"}, reconciles: 3},
		{name: "no savepoint asked: gone at once", reconciles: 1},
		{name: "session with a session job: kept", session: true, sessionJobs: true, kept: true},
		{name: "session without session jobs: gone", session: true, reconciles: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf := map[string]string{"high-availability.type": "kubernetes", "high-availability.storageDir": "file:///ha"}
			for k, v := range tt.conf {
				conf[k] = v
			}
			dep := deployedResource(t, flinkv1beta1.UpgradeModeSavepoint, conf)
			if tt.session {
				dep.Spec.Job = nil
				raw, err := flinkv1beta1.EncodeReconciledSpec(dep.Spec, false)
				require.NoError(t, err)
				dep.Status.ReconciliationStatus.LastReconciledSpec, dep.Status.JobStatus = raw, flinkv1beta1.JobStatus{}
			}
			now := metav1.Now()
			dep.DeletionTimestamp = &now
			w := newPhaseWorld(t, dep, true, true)
			if tt.sessionJobs {
				require.NoError(t, w.c.Create(context.Background(), &flinkv1beta1.FlinkSessionJob{
					ObjectMeta: metav1.ObjectMeta{Namespace: dep.Namespace, Name: "etl"},
					Spec:       flinkv1beta1.FlinkSessionJobSpec{DeploymentName: dep.Name}}))
			}

			gone := 0
			for i := 1; i <= 5 && gone == 0; i++ {
				got := &flinkv1beta1.FlinkDeployment{}
				err := w.c.Get(context.Background(), client.ObjectKeyFromObject(dep), got)
				if apierrors.IsNotFound(err) {
					gone = i - 1
					break
				}
				require.NoError(t, err)
				_, err = w.r.cleanup(context.Background(), NewScope(got))
				require.NoError(t, err, "reconcile %d", i)
			}
			if gone == 0 && !apierrors.IsNotFound(w.c.Get(context.Background(), client.ObjectKeyFromObject(dep), &flinkv1beta1.FlinkDeployment{})) {
				gone = -1
			}
			assert.Equal(t, tt.requests, w.changes(), "requests to the JobManager")
			if tt.kept {
				assert.Equal(t, -1, gone, "the resource stays")
				assert.NotNil(t, w.jobManager(), "the session cluster stays")
				assert.NotEmpty(t, w.haConfigMaps())
				assert.True(t, fixtures.EventWithReason(w.recorded(), "CleanupFailed"))
				return
			}
			assert.Equal(t, tt.reconciles, gone, "reconciles until the resource is gone")
			assert.Nil(t, w.jobManager())
			assert.Empty(t, w.haConfigMaps(), "HA metadata deleted with the cluster")
		})
	}
}

// TestSpecPhasesOrder: which phase of specPhases acts, by reconciliation state and spec change
// (what the state switch of the reconcile decided before it was a phase list), and the state it
// leaves. A stateless job on the fake client, whose deletions take effect at once, upgrades and
// rolls back within one reconcile.
func TestSpecPhasesOrder(t *testing.T) {
	nonce := int64(7)
	tests := []struct {
		name string
		// setup changes the stored resource; change the spec reconciled to (nil: unchanged).
		setup  func(dep *flinkv1beta1.FlinkDeployment)
		change func(spec *flinkv1beta1.FlinkDeploymentSpec)
		// want
		phase string
		state flinkv1beta1.ReconciliationState
	}{
		{name: "nothing deployed: first deployment", setup: func(dep *flinkv1beta1.FlinkDeployment) { dep.Status = flinkv1beta1.FlinkDeploymentStatus{} },
			phase: "firstDeployment", state: flinkv1beta1.ReconciliationDeployed},
		{name: "created suspended: nothing to run", setup: func(dep *flinkv1beta1.FlinkDeployment) {
			dep.Status = flinkv1beta1.FlinkDeploymentStatus{}
			dep.Spec.Job.State = flinkv1beta1.JobStateSuspended
		}, phase: "firstDeployment", state: ""},
		{name: "deployed, unchanged: the unchanged phases", phase: "unchanged", state: flinkv1beta1.ReconciliationDeployed},
		{name: "deployed, changed: recorded, then upgraded", change: func(spec *flinkv1beta1.FlinkDeploymentSpec) { spec.Job.Parallelism = 4 },
			phase: "upgrade", state: flinkv1beta1.ReconciliationDeployed},
		{name: "new savepointRedeployNonce: savepoint redeploy", change: func(spec *flinkv1beta1.FlinkDeploymentSpec) {
			spec.Job.SavepointRedeployNonce, spec.Job.InitialSavepointPath = &nonce, "file:///sp/chosen"
		}, phase: "savepointRedeploy", state: flinkv1beta1.ReconciliationDeployed},
		{name: "upgrading, unchanged: the upgrade goes on", setup: func(dep *flinkv1beta1.FlinkDeployment) {
			dep.Status.ReconciliationStatus.State = flinkv1beta1.ReconciliationUpgrading
		}, phase: "upgrade", state: flinkv1beta1.ReconciliationDeployed},
		{name: "rolling back, unchanged: the rollback goes on", setup: func(dep *flinkv1beta1.FlinkDeployment) {
			dep.Status.ReconciliationStatus.State = flinkv1beta1.ReconciliationRollingBack
		}, phase: "continueRollback", state: flinkv1beta1.ReconciliationRolledBack},
		{name: "rolling back, changed: abandoned for the new spec", setup: func(dep *flinkv1beta1.FlinkDeployment) {
			dep.Status.ReconciliationStatus.State = flinkv1beta1.ReconciliationRollingBack
		}, change: func(spec *flinkv1beta1.FlinkDeploymentSpec) { spec.Job.Parallelism = 4 },
			phase: "upgrade", state: flinkv1beta1.ReconciliationDeployed},
		{name: "rolled back, JobManager missing: rolled back again", setup: func(dep *flinkv1beta1.FlinkDeployment) {
			dep.Status.ReconciliationStatus.State = flinkv1beta1.ReconciliationRolledBack
			dep.Status.JobManagerDeploymentStatus = flinkv1beta1.JobManagerMissing
		}, phase: "rolledBack", state: flinkv1beta1.ReconciliationRolledBack},
		{name: "rolled back, spec set back to the stable one: recorded, no restart", setup: func(dep *flinkv1beta1.FlinkDeployment) {
			stable := dep.Spec.DeepCopy()
			stable.Job.Parallelism = 1
			raw, err := flinkv1beta1.EncodeReconciledSpec(*stable, false)
			require.NoError(t, err)
			dep.Status.ReconciliationStatus.LastStableSpec = raw
			dep.Status.ReconciliationStatus.State = flinkv1beta1.ReconciliationRolledBack
		}, change: func(spec *flinkv1beta1.FlinkDeploymentSpec) { spec.Job.Parallelism = 1 },
			phase: "rolledBack", state: flinkv1beta1.ReconciliationDeployed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dep := deployedResource(t, flinkv1beta1.UpgradeModeStateless, nil)
			if tt.setup != nil {
				tt.setup(dep)
			}
			w := newPhaseWorld(t, dep, dep.Status.ReconciliationStatus.LastReconciledSpec != "", false)
			desired := w.stored().Spec.DeepCopy()
			if tt.change != nil {
				tt.change(desired)
			}
			p := w.pass(desired)
			var acted string
			phases := w.r.specPhases()
			for i := range phases {
				ph := phases[i]
				phases[i].Run = func(ctx context.Context, p *pass) (jobs.PhaseResult, error) {
					out, err := ph.Run(ctx, p)
					if out.Done && acted == "" {
						acted = ph.Name
					}
					return out, err
				}
			}
			_, err := jobs.RunPhases(context.Background(), p, phases)
			require.NoError(t, err)
			require.NoError(t, w.r.finish(context.Background(), p.scope, nil))
			assert.Equal(t, tt.phase, acted)
			assert.Equal(t, tt.state, w.stored().Status.ReconciliationStatus.State)
		})
	}
}

// TestSettledIsLogged: a reconcile in which no phase acted says so in the operator's log, in the
// line the Apache operator writes ("[namespace/name] Resource fully reconciled, nothing to do");
// one that acted does not.
func TestSettledIsLogged(t *testing.T) {
	for _, tt := range []struct {
		name    string
		change  func(spec *flinkv1beta1.FlinkDeploymentSpec)
		settled bool
	}{
		{name: "running, unchanged", settled: true},
		{name: "changed: upgraded", change: func(spec *flinkv1beta1.FlinkDeploymentSpec) { spec.Job.Parallelism = 4 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newPhaseWorld(t, deployedResource(t, flinkv1beta1.UpgradeModeStateless, nil), true, false)
			desired := w.stored().Spec.DeepCopy()
			if tt.change != nil {
				tt.change(desired)
			}
			var lines []string
			ctx := log.IntoContext(context.Background(), funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{}))
			_, err := jobs.RunPhases(ctx, w.pass(desired), w.r.specPhases())
			require.NoError(t, err)
			line := `"msg"="[` + w.dep.Namespace + `/` + w.dep.Name + `] Resource fully reconciled, nothing to do"`
			found := 0
			for _, l := range lines {
				if strings.Contains(l, line) {
					found++
				}
			}
			if tt.settled {
				assert.Equal(t, 1, found, "logged: %v", lines)
			} else {
				assert.Zero(t, found, "logged: %v", lines)
			}
		})
	}
}
