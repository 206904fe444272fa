package validator

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/redact"
)

// hostileDeployment asks for a host-network, privileged pod and holds secret under a secret
// key, in its spec and in the spec recorded in its status (as the reconciler writes it).
func hostileDeployment(t *testing.T, secret string) *flinkv1beta1.FlinkDeployment {
	t.Helper()
	dep := deployment("orders", 2)
	conf, err := json.Marshal(map[string]string{"x.password": secret, "taskmanager.numberOfTaskSlots": "4"})
	require.NoError(t, err)
	dep.Spec.FlinkConfiguration = flinkv1beta1.FlinkConfiguration{Raw: conf}
	privileged := true
	dep.Spec.PodTemplate = &corev1.Pod{Spec: corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{
		Name: "flink-main-container", SecurityContext: &corev1.SecurityContext{Privileged: &privileged}}}}}
	recorded, err := flinkv1beta1.EncodeReconciledSpec(dep.Spec, false)
	require.NoError(t, err)
	dep.Status.ReconciliationStatus.LastReconciledSpec = recorded
	dep.Status.ReconciliationStatus.LastStableSpec = recorded
	return dep
}

// TestCustomValidatorSeesEveryFieldWhateverTheSecret: a secret value is masked where it is,
// never by replacing its text across the document, so a tenant cannot choose a "secret" that
// hides a field from the validators or breaks the document they receive.
func TestCustomValidatorSeesEveryFieldWhateverTheSecret(t *testing.T) {
	for _, secret := range []string{"hostNetwork", "privileged", `":{"`} {
		t.Run(secret, func(t *testing.T) {
			srv, bodies := validatorServer(t, func(req ValidationRequest) ValidationResponse {
				return ValidationResponse{APIVersion: APIVersion, Kind: KindResponse, UID: req.UID, Allowed: true}
			})
			chain := &Chain{OperatorConfig: operatorConfig(`[{"name": "policy", "url": "` + srv.URL + `"}]`)}
			errs, err := chain.Validate(context.Background(), Request{Operation: Update, Kind: "FlinkDeployment",
				Object: hostileDeployment(t, secret), OldObject: hostileDeployment(t, secret)})
			require.NoError(t, err)
			require.Empty(t, errs, "the validator could not read the request")
			require.Len(t, bodies(), 1)

			var req ValidationRequest
			require.NoError(t, json.Unmarshal([]byte(bodies()[0]), &req))
			for name, raw := range map[string]json.RawMessage{"object": req.Object, "oldObject": req.OldObject} {
				var got flinkv1beta1.FlinkDeployment
				require.NoError(t, json.Unmarshal(raw, &got), name)
				assertSeesEverything(t, name+".spec", got.Spec)
				for _, rec := range []string{got.Status.ReconciliationStatus.LastReconciledSpec, got.Status.ReconciliationStatus.LastStableSpec} {
					var recorded struct {
						Spec flinkv1beta1.FlinkDeploymentSpec `json:"spec"`
					}
					require.NoError(t, json.Unmarshal([]byte(rec), &recorded), name+": the recorded spec no longer parses")
					assertSeesEverything(t, name+" recorded spec", recorded.Spec)
				}
			}
		})
	}
}

func assertSeesEverything(t *testing.T, at string, spec flinkv1beta1.FlinkDeploymentSpec) {
	t.Helper()
	require.NotNil(t, spec.PodTemplate, at)
	assert.True(t, spec.PodTemplate.Spec.HostNetwork, "%s: hostNetwork hidden from the validator", at)
	require.Len(t, spec.PodTemplate.Spec.Containers, 1, at)
	sc := spec.PodTemplate.Spec.Containers[0].SecurityContext
	assert.True(t, sc != nil && sc.Privileged != nil && *sc.Privileged, "%s: privileged hidden from the validator", at)
	conf, err := spec.FlinkConfiguration.Flatten()
	require.NoError(t, err, at)
	assert.Equal(t, map[string]string{"x.password": redact.Mask, "taskmanager.numberOfTaskSlots": "4"}, conf, at)
}

// TestCustomValidatorGetsNoSecrets: env values of every pod template and container, the
// artifact download headers and the password of a jarURI never reach a validator, in the spec
// or in the spec recorded in the status.
func TestCustomValidatorGetsNoSecrets(t *testing.T) {
	const (
		awsSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
		bearer    = "Authorization:Bearer tok-5f1e2d3c4b5a"
		jarPass   = "s3cr3t-pass"
	)
	env := []corev1.EnvVar{{Name: "AWS_SECRET_ACCESS_KEY", Value: awsSecret}}
	dep := deployment("orders", 2)
	dep.Spec.FlinkConfiguration = flinkv1beta1.FlinkConfiguration{Raw: []byte(
		`{"kubernetes.operator.user.artifacts.http.header": "` + bearer + `", "taskmanager.numberOfTaskSlots": "4"}`)}
	dep.Spec.PodTemplate = &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "flink-main-container", Env: env}}}}
	dep.Spec.JobManager = &flinkv1beta1.JobManagerSpec{PodTemplate: &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "fetch", Env: env}}}}}
	dep.Spec.TaskManager = &flinkv1beta1.TaskManagerSpec{PodTemplate: &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "sidecar", Env: env}}}}}
	dep.Spec.Job = &flinkv1beta1.JobSpec{JarURI: "https://deploy:" + jarPass + "@repo.example.com/job.jar"}
	recorded, err := flinkv1beta1.EncodeReconciledSpec(dep.Spec, false)
	require.NoError(t, err)
	dep.Status.ReconciliationStatus.LastReconciledSpec = recorded

	srv, bodies := validatorServer(t, func(req ValidationRequest) ValidationResponse {
		return ValidationResponse{APIVersion: APIVersion, Kind: KindResponse, UID: req.UID, Allowed: true}
	})
	chain := &Chain{OperatorConfig: operatorConfig(`[{"name": "policy", "url": "` + srv.URL + `"}]`)}
	errs, err := chain.Validate(context.Background(), Request{Operation: Create, Kind: "FlinkDeployment", Object: dep})
	require.NoError(t, err)
	require.Empty(t, errs)
	require.Len(t, bodies(), 1)
	body := bodies()[0]
	for _, secret := range []string{awsSecret, strings.ReplaceAll(awsSecret, "/", `\/`), "tok-5f1e2d3c4b5a", jarPass} {
		assert.NotContains(t, body, secret, "a secret reached the validator")
	}
	var req ValidationRequest
	require.NoError(t, json.Unmarshal([]byte(body), &req))
	var got flinkv1beta1.FlinkDeployment
	require.NoError(t, json.Unmarshal(req.Object, &got))
	assert.Equal(t, []corev1.EnvVar{{Name: "AWS_SECRET_ACCESS_KEY", Value: redact.Mask}}, got.Spec.JobManager.PodTemplate.Spec.InitContainers[0].Env,
		"the variable's name stays, for validators that check which variables are set")
	assert.Equal(t, "https://deploy:"+redact.Mask+"@repo.example.com/job.jar", got.Spec.Job.JarURI)
}
