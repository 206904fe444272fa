package validator

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/extension/endpoint"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// deployment is a FlinkDeployment whose configuration holds a secret value.
func deployment(name string, generation int64) *flinkv1beta1.FlinkDeployment {
	return &flinkv1beta1.FlinkDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", UID: "uid-" + "1", Generation: generation,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: flinkv1beta1.FlinkDeploymentSpec{FlinkVersion: flinkv1beta1.FlinkVersion1_20, ServiceAccount: "flink",
			FlinkConfiguration: flinkv1beta1.FlinkConfiguration{Raw: []byte(`{"s3.secret-key":"hunter2-very-secret","taskmanager.numberOfTaskSlots":"4"}`)}},
	}
}

// validatorServer answers every ValidationRequest with answer(req); bodies returns the
// requests it got.
func validatorServer(t *testing.T, answer func(ValidationRequest) ValidationResponse) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req ValidationRequest
		if err == nil {
			err = json.Unmarshal(body, &req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		bodies = append(bodies, string(body))
		mu.Unlock()
		_ = json.NewEncoder(w).Encode(answer(req))
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), bodies...)
	}
}

// operatorConfig lists validators as the operator ConfigMap would, with loopback allowed.
func operatorConfig(validators string) func() map[string]string {
	conf := map[string]string{options.ExtensionValidators.Key: validators, options.ExtensionAllowedHosts.Key: "127.0.0.1"}
	return func() map[string]string { return conf }
}

func TestCustomValidatorRejectsWithFieldErrors(t *testing.T) {
	srv, bodies := validatorServer(t, func(req ValidationRequest) ValidationResponse {
		return ValidationResponse{APIVersion: APIVersion, Kind: KindResponse, UID: req.UID, Allowed: false,
			Errors: []FieldError{{Field: "spec.taskManager.replicas", Message: "team-a may run 4 TaskManagers at most"}}}
	})
	chain := &Chain{OperatorConfig: operatorConfig(`[{"name": "quota", "url": "` + srv.URL + `/validate"}]`)}

	old := deployment("orders", 1)
	errs, err := chain.Validate(context.Background(), Request{Operation: Update, Kind: "FlinkDeployment", Object: deployment("orders", 2), OldObject: old})
	require.NoError(t, err)
	require.Len(t, errs, 1)
	assert.Equal(t, "spec.taskManager.replicas", errs[0].Field)
	assert.Equal(t, field.ErrorTypeForbidden, errs[0].Type)
	assert.Equal(t, "custom validator quota: team-a may run 4 TaskManagers at most", errs[0].Detail)

	require.Len(t, bodies(), 1)
	body := bodies()[0]
	assert.NotContains(t, body, "hunter2-very-secret", "a secret configuration value reached the validator")
	assert.NotContains(t, body, "managedFields")
	var req map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &req))
	assert.Equal(t, APIVersion, req["apiVersion"])
	assert.Equal(t, KindRequest, req["kind"])
	assert.Equal(t, "UPDATE", req["operation"])
	assert.Equal(t, map[string]any{"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment", "namespace": "team-a", "name": "orders"}, req["resource"])
	obj := req["object"].(map[string]any)
	assert.Equal(t, "FlinkDeployment", obj["kind"])
	assert.Equal(t, "flink.apache.org/v1beta1", obj["apiVersion"])
	assert.Equal(t, "4", obj["spec"].(map[string]any)["flinkConfiguration"].(map[string]any)["taskmanager.numberOfTaskSlots"])
	assert.EqualValues(t, 1, req["oldObject"].(map[string]any)["metadata"].(map[string]any)["generation"])
}

func TestCustomValidatorAllows(t *testing.T) {
	srv, _ := validatorServer(t, func(req ValidationRequest) ValidationResponse {
		return ValidationResponse{APIVersion: APIVersion, Kind: KindResponse, UID: req.UID, Allowed: true}
	})
	chain := &Chain{OperatorConfig: operatorConfig(`- name: naming
  url: ` + srv.URL + `
  kinds: [FlinkDeployment]`)}
	errs, err := chain.Validate(context.Background(), Request{Operation: Create, Kind: "FlinkDeployment", Object: deployment("orders", 1)})
	require.NoError(t, err)
	assert.Empty(t, errs)
}

// hangingServer never answers before the client gives up.
func hangingServer(t *testing.T) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // then the server notices the client hanging up
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // first: Close waits for the handlers
	return srv
}

func TestCustomValidatorTimeoutAppliesFailurePolicy(t *testing.T) {
	srv := hangingServer(t)
	for _, tc := range []struct {
		policy string
		want   int
	}{{"", 1}, {"Fail", 1}, {"Ignore", 0}} {
		t.Run("policy="+tc.policy, func(t *testing.T) {
			var failures atomic.Int32
			chain := &Chain{OperatorConfig: operatorConfig(`[{"name": "slow", "url": "` + srv.URL + `", "timeout": "100 ms", "failurePolicy": "` + tc.policy + `"}]`),
				OnFailure: func(name string, _ endpoint.FailurePolicy, err error) {
					assert.Equal(t, "slow", name)
					assert.ErrorIs(t, err, context.DeadlineExceeded)
					failures.Add(1)
				}}
			errs, err := chain.Validate(context.Background(), Request{Operation: Create, Kind: "FlinkDeployment", Object: deployment("orders", 1)})
			require.NoError(t, err)
			assert.EqualValues(t, 1, failures.Load())
			require.Len(t, errs, tc.want)
			if tc.want > 0 {
				assert.Equal(t, field.ErrorTypeInternal, errs[0].Type)
				assert.Contains(t, errs[0].Detail, "custom validator slow did not answer (failurePolicy Fail)")
			}
		})
	}
}

func TestCustomValidatorMalformedAnswerIsAFailure(t *testing.T) {
	for name, answer := range map[string]func(ValidationRequest) ValidationResponse{
		"other version": func(req ValidationRequest) ValidationResponse {
			return ValidationResponse{APIVersion: "extensions.flink-operator.io/v2", Kind: KindResponse, UID: req.UID, Allowed: true}
		},
		"other request": func(ValidationRequest) ValidationResponse {
			return ValidationResponse{APIVersion: APIVersion, Kind: KindResponse, UID: "someone-else", Allowed: true}
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv, _ := validatorServer(t, answer)
			chain := &Chain{OperatorConfig: operatorConfig(`[{"name": "v", "url": "` + srv.URL + `"}]`)}
			errs, err := chain.Validate(context.Background(), Request{Operation: Create, Kind: "FlinkDeployment", Object: deployment("orders", 1)})
			require.NoError(t, err)
			require.Len(t, errs, 1)
			assert.Equal(t, field.ErrorTypeInternal, errs[0].Type)
		})
	}
}

func TestCustomValidatorAskedOncePerGenerationByTheReconciler(t *testing.T) {
	var calls atomic.Int32
	srv, _ := validatorServer(t, func(req ValidationRequest) ValidationResponse {
		calls.Add(1)
		return ValidationResponse{APIVersion: APIVersion, Kind: KindResponse, UID: req.UID, Allowed: true}
	})
	chain := &Chain{OperatorConfig: operatorConfig(`[{"name": "v", "url": "` + srv.URL + `"}]`)}
	for _, gen := range []int64{1, 1, 1, 2, 2} {
		_, err := chain.Validate(context.Background(), Request{Operation: Reconcile, Kind: "FlinkDeployment", Object: deployment("orders", gen)})
		require.NoError(t, err)
	}
	assert.EqualValues(t, 2, calls.Load())
}

func TestEmbeddedValidator(t *testing.T) {
	chain := &Chain{Embedded: []Named{{Name: "go", FailurePolicy: endpoint.Fail, Validator: Func(func(_ context.Context, req Request) (field.ErrorList, error) {
		return field.ErrorList{field.Forbidden(field.NewPath("metadata", "name"), req.Object.GetName()+" is reserved")}, nil
	})}}}
	errs, err := chain.Validate(context.Background(), Request{Operation: Create, Kind: "FlinkDeployment", Object: deployment("orders", 1)})
	require.NoError(t, err)
	require.Len(t, errs, 1)
	assert.Equal(t, "metadata.name: Forbidden: orders is reserved", errs[0].Error())
}

func TestCustomValidatorsMisconfiguredRefuse(t *testing.T) {
	chain := &Chain{OperatorConfig: operatorConfig(`[{"name": "v", "url": "http://validator.example.com/"}]`)}
	errs, err := chain.Validate(context.Background(), Request{Operation: Create, Kind: "FlinkDeployment", Object: deployment("orders", 1)})
	require.NoError(t, err)
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Error(), "plain http only to the hosts")
}

func TestCustomValidatorOverTLSWithItsCA(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req ValidationRequest
		require.NoError(t, json.NewDecoder(r.Body).Decode(&req))
		_ = json.NewEncoder(w).Encode(ValidationResponse{APIVersion: APIVersion, Kind: KindResponse, UID: req.UID,
			Errors: []FieldError{{Field: "metadata.name", Message: "reserved"}}})
	}))
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.crt")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))

	trusted := &Chain{OperatorConfig: operatorConfig(`[{"name": "tls", "url": "` + srv.URL + `", "caFile": "` + ca + `"}]`)}
	errs, err := trusted.Validate(context.Background(), Request{Operation: Create, Kind: "FlinkDeployment", Object: deployment("orders", 1)})
	require.NoError(t, err)
	require.Len(t, errs, 1)
	assert.Equal(t, "metadata.name: Forbidden: custom validator tls: reserved", errs[0].Error())

	// Without its CA the server's certificate is not trusted: no answer, failurePolicy Fail.
	untrusted := &Chain{OperatorConfig: operatorConfig(`[{"name": "tls", "url": "` + srv.URL + `"}]`)}
	errs, err = untrusted.Validate(context.Background(), Request{Operation: Create, Kind: "FlinkDeployment", Object: deployment("orders", 1)})
	require.NoError(t, err)
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Error(), "certificate")
}
