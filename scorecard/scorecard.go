// Package scorecard holds this operator's custom scorecard tests: behaviour a user checks after
// installing from OperatorHub, run against a live cluster with the operator installed. The
// scorecard runner starts them in a pod (image flink-operator-scorecard, see
// cmd/flink-scorecard-tests); the e2e suite runs the same functions against the local cluster
// (test/e2e TestScorecardCustomTests), because the runner itself needs a container runtime.
package scorecard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// Env is what a test runs against.
type Env struct {
	Client    client.Client
	Namespace string
	// Sample is the FlinkDeployment of the CSV's alm-examples.
	Sample *flinkv1beta1.FlinkDeployment
	// Timeout bounds each wait (default 5 minutes).
	Timeout time.Duration
	// Logf records progress into the test's log.
	Logf func(format string, args ...any)
}

// Test is one custom scorecard test.
type Test struct {
	Name        string
	Description string
	Run         func(ctx context.Context, env Env) error
}

// Tests are the custom tests, by the names config/scorecard uses.
var Tests = []Test{
	{Name: "sample-ready", Description: "The alm-examples FlinkDeployment becomes Ready with its job RUNNING, and deletes cleanly.", Run: sampleReady},
	{Name: "suspend-resume", Description: "Suspending the sample removes its cluster; resuming brings the job back to RUNNING.", Run: suspendResume},
}

// Find returns the test with the given name.
func Find(name string) (Test, bool) {
	for _, t := range Tests {
		if t.Name == name {
			return t, true
		}
	}
	return Test{}, false
}

// Status runs a test and reports it the way the scorecard runner reads it.
func Status(ctx context.Context, test Test, env Env) v1alpha3.TestStatus {
	var log strings.Builder
	inner := env.Logf
	env.Logf = func(format string, args ...any) {
		fmt.Fprintf(&log, format+"\n", args...)
		if inner != nil {
			inner(format, args...)
		}
	}
	result := v1alpha3.TestResult{Name: test.Name, State: v1alpha3.PassState, CreationTimestamp: metav1.Now()}
	if err := test.Run(ctx, env); err != nil {
		result.State = v1alpha3.FailState
		result.Errors = []string{err.Error()}
	}
	result.Log = log.String()
	return v1alpha3.TestStatus{Results: []v1alpha3.TestResult{result}}
}

// SampleFromCSV returns the FlinkDeployment of the CSV's alm-examples.
func SampleFromCSV(csv *operatorsv1alpha1.ClusterServiceVersion) (*flinkv1beta1.FlinkDeployment, error) {
	var examples []json.RawMessage
	if err := json.Unmarshal([]byte(csv.Annotations["alm-examples"]), &examples); err != nil {
		return nil, fmt.Errorf("alm-examples: %w", err)
	}
	for _, raw := range examples {
		var d flinkv1beta1.FlinkDeployment
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, fmt.Errorf("alm-examples: %w", err)
		}
		if d.Kind == "FlinkDeployment" {
			return &d, nil
		}
	}
	return nil, errors.New("alm-examples has no FlinkDeployment")
}

func (e Env) sample(suffix string) *flinkv1beta1.FlinkDeployment {
	d := e.Sample.DeepCopy()
	d.Name = d.Name + "-" + suffix
	d.Namespace = e.Namespace
	return d
}

func (e Env) timeout() time.Duration {
	if e.Timeout > 0 {
		return e.Timeout
	}
	return 5 * time.Minute
}

// waitFor polls the deployment until cond holds; the error says what was last seen.
func (e Env) waitFor(ctx context.Context, d *flinkv1beta1.FlinkDeployment, what string, cond func(*flinkv1beta1.FlinkDeployment) bool) error {
	started := time.Now()
	var last flinkv1beta1.FlinkDeployment
	err := wait.PollUntilContextTimeout(ctx, time.Second, e.timeout(), true, func(ctx context.Context) (bool, error) {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(d), &last); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return cond(&last), nil
	})
	if err != nil {
		return fmt.Errorf("%s %s: not %s within %s (lifecycle %s, job %s, error %q)", d.Kind, d.Name, what, e.timeout(),
			last.Status.LifecycleState, last.Status.JobStatus.State, last.Status.Error)
	}
	e.Logf("%s: %s after %s", d.Name, what, time.Since(started).Round(time.Second))
	return nil
}

func readyAndRunning(d *flinkv1beta1.FlinkDeployment) bool {
	c := meta.FindStatusCondition(d.Status.Conditions, "Ready")
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == d.Generation &&
		d.Status.JobStatus.State == flinkv1beta1.JobStatusRunning
}

func (e Env) deleteAndWait(ctx context.Context, d *flinkv1beta1.FlinkDeployment) error {
	if err := e.Client.Delete(ctx, d); client.IgnoreNotFound(err) != nil {
		return err
	}
	err := wait.PollUntilContextTimeout(ctx, time.Second, e.timeout(), true, func(ctx context.Context) (bool, error) {
		err := e.Client.Get(ctx, client.ObjectKeyFromObject(d), &flinkv1beta1.FlinkDeployment{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err != nil {
		return fmt.Errorf("%s not deleted within %s: %w", d.Name, e.timeout(), err)
	}
	e.Logf("%s: deleted", d.Name)
	return nil
}

func sampleReady(ctx context.Context, e Env) error {
	d := e.sample("ready")
	if err := e.Client.Create(ctx, d); err != nil {
		return fmt.Errorf("create the sample: %w", err)
	}
	if err := e.waitFor(ctx, d, "Ready with the job RUNNING", readyAndRunning); err != nil {
		return err
	}
	return e.deleteAndWait(ctx, d)
}

func suspendResume(ctx context.Context, e Env) error {
	d := e.sample("suspend")
	if err := e.Client.Create(ctx, d); err != nil {
		return fmt.Errorf("create the sample: %w", err)
	}
	if err := e.waitFor(ctx, d, "Ready with the job RUNNING", readyAndRunning); err != nil {
		return err
	}
	if err := e.setJobState(ctx, d, flinkv1beta1.JobStateSuspended); err != nil {
		return err
	}
	if err := e.waitFor(ctx, d, "SUSPENDED without a JobManager", func(d *flinkv1beta1.FlinkDeployment) bool {
		return d.Status.LifecycleState == flinkv1beta1.LifecycleSuspended && d.Status.JobManagerDeploymentStatus == flinkv1beta1.JobManagerMissing
	}); err != nil {
		return err
	}
	if err := e.setJobState(ctx, d, flinkv1beta1.JobStateRunning); err != nil {
		return err
	}
	if err := e.waitFor(ctx, d, "Ready with the job RUNNING again", readyAndRunning); err != nil {
		return err
	}
	return e.deleteAndWait(ctx, d)
}

func (e Env) setJobState(ctx context.Context, d *flinkv1beta1.FlinkDeployment, state flinkv1beta1.JobState) error {
	var current flinkv1beta1.FlinkDeployment
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(d), &current); err != nil {
		return err
	}
	patch := client.MergeFrom(current.DeepCopy())
	current.Spec.Job.State = state
	if err := e.Client.Patch(ctx, &current, patch); err != nil {
		return fmt.Errorf("set job.state %s: %w", state, err)
	}
	e.Logf("%s: job.state set to %s", d.Name, state)
	return nil
}
