// Package bundle_test checks the committed OLM bundle (bundle/, written by make bundle) the way
// `operator-sdk bundle validate --select-optional suite=operatorframework` and OperatorHub's CI
// do, with the same operator-framework/api validators, and checks what those validators do not:
// that every alm-examples entry applies to the CRDs with strict field validation, and that the
// CSV keeps the promises docs/install/olm.md makes (install modes, least privilege, webhooks, images).
package bundle_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/api/pkg/validation"
	"github.com/operator-framework/api/pkg/validation/errors"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-operator/flink-operator/test/kubeenv"
)

func loadBundle(t *testing.T) (*manifests.Bundle, string) {
	t.Helper()
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	b, err := manifests.GetBundleFromDir(filepath.Join(root, "bundle"))
	require.NoError(t, err, "load bundle/ (run make bundle)")
	require.NotNil(t, b.CSV)
	return b, root
}

// operatorFrameworkSuite is what operator-sdk runs for `--select-optional suite=operatorframework`.
var operatorFrameworkSuite = interfaces.Validators{
	validation.OperatorHubV2Validator,
	validation.StandardCapabilitiesValidator,
	validation.StandardCategoriesValidator,
	validation.AlphaDeprecatedAPIsValidator,
	validation.GoodPracticesValidator,
}

func TestBundlePassesValidatorsWithoutWarnings(t *testing.T) {
	b, _ := loadBundle(t)
	objs := b.ObjectsToValidate()
	for _, obj := range b.Objects {
		objs = append(objs, obj)
	}
	// The Kubernetes version the bundle is checked against for removed APIs (as --optional-values).
	objs = append(objs, map[string]string{"k8s-version": "1.37"})

	var results []errors.ManifestResult
	results = append(results, validation.DefaultBundleValidators.Validate(objs...)...)
	results = append(results, operatorFrameworkSuite.Validate(objs...)...)
	for _, r := range results {
		for _, e := range r.Errors {
			t.Errorf("%s: error: %s", r.Name, e)
		}
		for _, w := range r.Warnings {
			t.Errorf("%s: warning: %s", r.Name, w)
		}
	}
}

// TestValidatorsCatchABrokenCSV proves the validator test above can fail.
func TestValidatorsCatchABrokenCSV(t *testing.T) {
	b, _ := loadBundle(t)
	broken := b.CSV.DeepCopy()
	broken.Spec.Icon = []operatorsv1alpha1.Icon{{Data: "", MediaType: ""}}
	broken.Annotations["alm-examples"] = "[{"
	results := append(validation.DefaultBundleValidators.Validate(broken), operatorFrameworkSuite.Validate(broken)...)
	var problems int
	for _, r := range results {
		problems += len(r.Errors) + len(r.Warnings)
	}
	assert.NotZero(t, problems)
}

func TestALMExamplesApplyStrictly(t *testing.T) {
	b, _ := loadBundle(t)
	var examples []map[string]any
	require.NoError(t, json.Unmarshal([]byte(b.CSV.Annotations["alm-examples"]), &examples))

	covered := map[string]bool{}
	for _, e := range examples {
		covered[(&unstructured.Unstructured{Object: e}).GetKind()] = true
	}
	for _, owned := range b.CSV.Spec.CustomResourceDefinitions.Owned {
		assert.True(t, covered[owned.Kind], "alm-examples has no %s", owned.Kind)
	}

	// A control plane of this test's own: it installs the bundle's CRDs, not config/crd's,
	// and it is the only test of the package that needs one.
	env := kubeenv.Start(t, kubeenv.Options{CRDDirs: []string{"bundle/manifests"}})
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "alm-examples"}}
	require.NoError(t, env.Client.Create(ctx, ns))
	for _, e := range examples {
		obj := &unstructured.Unstructured{Object: e}
		obj.SetNamespace(ns.Name)
		t.Run(obj.GetKind(), func(t *testing.T) {
			// Strict: an unknown or duplicated field is an error, not a silently dropped value.
			err := env.Client.Create(ctx, obj, client.FieldValidation(metav1.FieldValidationStrict))
			require.NoError(t, err)
		})
	}
}

func TestCSVContract(t *testing.T) {
	b, root := loadBundle(t)
	csv := b.CSV

	t.Run("all install modes", func(t *testing.T) {
		modes := map[operatorsv1alpha1.InstallModeType]bool{}
		for _, m := range csv.Spec.InstallModes {
			modes[m.Type] = m.Supported
		}
		for _, m := range []operatorsv1alpha1.InstallModeType{
			operatorsv1alpha1.InstallModeTypeOwnNamespace, operatorsv1alpha1.InstallModeTypeSingleNamespace,
			operatorsv1alpha1.InstallModeTypeMultiNamespace, operatorsv1alpha1.InstallModeTypeAllNamespaces,
		} {
			assert.True(t, modes[m], "install mode %s", m)
		}
	})

	strategy := csv.Spec.InstallStrategy.StrategySpec
	require.Len(t, strategy.DeploymentSpecs, 1)
	manager := strategy.DeploymentSpecs[0].Spec.Template.Spec.Containers[0]

	t.Run("watches the OperatorGroup's target namespaces", func(t *testing.T) {
		var found bool
		for _, e := range manager.Env {
			if e.Name == "WATCH_NAMESPACE" {
				found = true
				require.NotNil(t, e.ValueFrom)
				assert.Equal(t, "metadata.annotations['olm.targetNamespaces']", e.ValueFrom.FieldRef.FieldPath)
			}
		}
		assert.True(t, found)
	})

	t.Run("image", func(t *testing.T) {
		assert.Equal(t, csv.Annotations["containerImage"], manager.Image)
		assert.True(t, strings.HasSuffix(manager.Image, ":"+csv.Spec.Version.String()), "image %s tagged with the version", manager.Image)
		var related []string
		for _, r := range csv.Spec.RelatedImages {
			related = append(related, r.Image)
		}
		assert.Contains(t, related, manager.Image)
	})

	t.Run("resources requested", func(t *testing.T) {
		assert.False(t, manager.Resources.Requests.Cpu().IsZero())
		assert.False(t, manager.Resources.Requests.Memory().IsZero())
		assert.False(t, manager.Resources.Limits.Memory().IsZero())
	})

	t.Run("least privilege", func(t *testing.T) {
		// Namespaced rules are granted by OLM only in the watched namespaces; the cluster-wide
		// rules are the two the metrics endpoint's authentication needs.
		for _, p := range strategy.ClusterPermissions {
			for _, r := range p.Rules {
				for _, res := range r.Resources {
					assert.Contains(t, []string{"tokenreviews", "subjectaccessreviews"}, res)
				}
			}
		}
		var namespaced []string
		for _, p := range strategy.Permissions {
			for _, r := range p.Rules {
				namespaced = append(namespaced, r.Resources...)
				assert.NotContains(t, r.Verbs, "*")
			}
		}
		assert.Contains(t, namespaced, "flinkdeployments")
		assert.Contains(t, namespaced, "leases")
	})

	t.Run("every webhook is defined", func(t *testing.T) {
		defined := map[string]operatorsv1alpha1.WebhookDescription{}
		for _, w := range csv.Spec.WebhookDefinitions {
			defined[w.GenerateName] = w
		}
		for _, name := range webhookNames(t, filepath.Join(root, "config", "webhook", "manifests.yaml")) {
			w, ok := defined[name]
			if assert.True(t, ok, "webhook %s missing from the CSV", name) {
				assert.Equal(t, "flink-operator-controller-manager", w.DeploymentName)
				assert.Equal(t, int32(9443), w.TargetPort.IntVal)
				require.NotNil(t, w.FailurePolicy)
				assert.Equal(t, admissionregistrationv1.Fail, *w.FailurePolicy)
			}
		}
	})

	t.Run("upgrade graph", func(t *testing.T) {
		assert.Equal(t, "flink-operator.v"+csv.Spec.Version.String(), csv.Name)
		assert.NotEmpty(t, csv.Spec.Replaces)
		assert.Equal(t, fmt.Sprintf(">=0.0.0 <%s", csv.Spec.Version.String()), csv.Annotations["olm.skipRange"])
		assert.NotEmpty(t, csv.Spec.MinKubeVersion)
	})
}

func webhookNames(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var names []string
	decoder := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var cfg admissionregistrationv1.ValidatingWebhookConfiguration // same shape for the names
		if err := decoder.Decode(&cfg); err != nil {
			break
		}
		for _, w := range cfg.Webhooks {
			names = append(names, w.Name)
		}
	}
	require.NotEmpty(t, names)
	return names
}
