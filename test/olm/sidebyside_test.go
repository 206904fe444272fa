//go:build olm

package olm_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/test/kubeenv"
	"github.com/flink-operator/flink-operator/test/localenv"
	"github.com/flink-operator/flink-operator/test/nodeagent"
	"github.com/flink-operator/flink-operator/test/podnet"
	testwait "github.com/flink-operator/flink-operator/test/wait"
)

// The Apache operator as OperatorHub ships it: package flink-kubernetes-operator, installed in
// the global "operators" namespace for all namespaces, owning the flink.apache.org CRDs.
const (
	apachePkg   = "flink-kubernetes-operator"
	apacheCSV   = "flink-kubernetes-operator.v1.15.0"
	apacheNS    = "operators"
	apacheImage = "example.com/apache/flink-kubernetes-operator:1.15.0"
)

// ownerConflictMessage is what OLM (v0.33) writes on the CSV that arrives second when two
// OperatorGroups whose target namespaces intersect would both provide the same APIs.
const ownerConflictMessage = "intersecting operatorgroups provide the same apis"

// TestSideBySideWithTheApacheOperator: a platform that runs the Apache operator from
// OperatorHub subscribes to this operator as well. OLM refuses to run both: the second CSV
// fails with InterOperatorGroupOwnerConflict, and its deployment is never started, so the two
// operators never reconcile the same resources. Once the Apache operator's Subscription and CSV
// are removed (its CRDs, and with them every resource, stay), this operator's CSV installs and
// takes the existing resources over. This is the path docs/migration.md describes.
func TestSideBySideWithTheApacheOperator(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	dir := t.TempDir()
	manager := filepath.Join(dir, "manager")
	require.NoError(t, kubeenv.BuildOperator(ctx, manager))
	sleep, err := exec.LookPath("sleep")
	require.NoError(t, err)

	env, err := localenv.Start(ctx, localenv.Options{Dir: dir, SkipCRDs: true, Pods: podnet.Current(),
		ProcessImages: map[string]nodeagent.ProcessImage{
			operatorImage: {Binary: manager, PortFlags: map[int32]string{9443: "--webhook-port=%d", 8443: "--metrics-bind-address=:%d"}},
			// The stand-in for the Apache operator's pod only has to be running: OLM judges the
			// CSV by its Deployment's availability.
			apacheImage: {Binary: sleep},
		}})
	require.NoError(t, err)
	t.Cleanup(env.Stop)
	scheme := kubeenv.Scheme()
	utilruntime.Must(operatorsv1alpha1.AddToScheme(scheme))
	utilruntime.Must(operatorsv1.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	c, err := client.New(env.Cluster.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)

	_, err = envtest.InstallCRDs(env.Cluster.Config, envtest.CRDInstallOptions{Paths: []string{requireEnv(t, "OLM_CRDS")}, ErrorIfPathMissing: true})
	require.NoError(t, err, "install OLM's CRDs")
	for _, ns := range []string{"olm", apacheNS, operatorNS, watchedNS} {
		require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	startOLM(t, dir, env.Cluster)
	ourCatalog := addCatalogSource(t, ctx, c, "flink-operator-catalog", serveCatalog(t, dir, filepath.Join(root, "catalog")))
	apacheCatalog := addCatalogSource(t, ctx, c, "apache-catalog",
		serveCatalog(t, dir, writeStandInCatalog(t, filepath.Join(root, "catalog", pkg, "bundles", currentCSV+".yaml"))))

	// 1. The Apache operator, installed as OperatorHub installs it: all namespaces.
	require.NoError(t, c.Create(ctx, &operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Name: "global-operators", Namespace: apacheNS}}))
	subscribe(t, ctx, c, apacheNS, apachePkg, "alpha", apacheCatalog)
	waitCSVPhaseIn(t, ctx, c, apacheNS, apacheCSV, operatorsv1alpha1.CSVPhaseSucceeded)
	existing := existingResources(t, ctx, c)

	// 2. This operator, for one of the namespaces the Apache operator already watches.
	require.NoError(t, c.Create(ctx, &operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Name: "flink-operator", Namespace: operatorNS},
		Spec: operatorsv1.OperatorGroupSpec{TargetNamespaces: []string{watchedNS}}}))
	subscribe(t, ctx, c, operatorNS, pkg, "stable", ourCatalog)
	csv := waitCSVPhaseIn(t, ctx, c, operatorNS, currentCSV, operatorsv1alpha1.CSVPhaseFailed)
	assert.Equal(t, operatorsv1alpha1.CSVReasonInterOperatorGroupOwnerConflict, csv.Status.Reason)
	assert.Equal(t, ownerConflictMessage, csv.Status.Message)
	t.Logf("OLM on %s: %s: %s", currentCSV, csv.Status.Reason, csv.Status.Message)
	// The InstallPlan itself completes (CRDs, CSV, RBAC): the refusal is the CSV's.
	testwait.Until(t, ctx, 4*time.Minute, "the InstallPlan of "+currentCSV+" Complete", func() (bool, error) {
		return installPlanFor(t, ctx, c, operatorNS, currentCSV).Status.Phase == operatorsv1alpha1.InstallPlanPhaseComplete, nil
	})
	// Nothing of this operator runs: its Deployment is removed (or never made), so no two
	// operators ever reconcile the same FlinkDeployment.
	err = c.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: deploymentName}, &appsv1.Deployment{})
	assert.True(t, apierrors.IsNotFound(err), "the refused CSV's deployment: %v", err)
	// The Apache operator keeps running and keeps the APIs.
	var group operatorsv1.OperatorGroup
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: apacheNS, Name: "global-operators"}, &group))
	assert.Contains(t, group.Annotations[operatorsv1.OperatorGroupProvidedAPIsAnnotationKey], "FlinkDeployment.v1beta1.flink.apache.org")
	waitCSVPhaseIn(t, ctx, c, apacheNS, apacheCSV, operatorsv1alpha1.CSVPhaseSucceeded)

	// 3. The migration: the Apache operator's Subscription and CSV go; its CRDs stay, and so
	// do all resources. OLM then installs this operator's CSV, which takes them over.
	require.NoError(t, c.Delete(ctx, &operatorsv1alpha1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: apacheNS, Name: apachePkg}}))
	require.NoError(t, c.Delete(ctx, &operatorsv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: apacheNS, Name: apacheCSV}}))
	waitCSVPhaseIn(t, ctx, c, operatorNS, currentCSV, operatorsv1alpha1.CSVPhaseSucceeded)
	for _, before := range existing {
		after := before.DeepCopyObject().(client.Object)
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(before), after), "%s kept", before.GetName())
		assert.Equal(t, before.GetUID(), after.GetUID())
	}
	testwait.Until(t, ctx, 4*time.Minute, "this operator reconciles existing-session", func() (bool, error) {
		var fd flinkv1beta1.FlinkDeployment
		if err := c.Get(ctx, client.ObjectKey{Namespace: watchedNS, Name: "existing-session"}, &fd); err != nil {
			return false, err
		}
		return fd.Status.LifecycleState != "", nil
	})
}

// addCatalogSource registers a gRPC catalog served on port in the olm namespace.
func addCatalogSource(t *testing.T, ctx context.Context, c client.Client, name string, port int) string {
	t.Helper()
	require.NoError(t, c.Create(ctx, &operatorsv1alpha1.CatalogSource{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "olm"},
		Spec: operatorsv1alpha1.CatalogSourceSpec{SourceType: operatorsv1alpha1.SourceTypeGrpc,
			Address: "127.0.0.1:" + strconv.Itoa(port), DisplayName: name},
	}))
	return name
}

// subscribe subscribes namespace to a package's channel with automatic approval, as the
// OperatorHub console does by default.
func subscribe(t *testing.T, ctx context.Context, c client.Client, namespace, pkgName, channel, catalog string) {
	t.Helper()
	require.NoError(t, c.Create(ctx, &operatorsv1alpha1.Subscription{
		ObjectMeta: metav1.ObjectMeta{Name: pkgName, Namespace: namespace},
		Spec: &operatorsv1alpha1.SubscriptionSpec{CatalogSource: catalog, CatalogSourceNamespace: "olm", Package: pkgName,
			Channel: channel, InstallPlanApproval: operatorsv1alpha1.ApprovalAutomatic},
	}))
}

// waitCSVPhaseIn waits until the CSV in namespace reaches phase and returns it.
func waitCSVPhaseIn(t *testing.T, ctx context.Context, c client.Client, namespace, name string, phase operatorsv1alpha1.ClusterServiceVersionPhase) *operatorsv1alpha1.ClusterServiceVersion {
	t.Helper()
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	var last string
	start := time.Now()
	testwait.Until(t, ctx, 4*time.Minute, "CSV "+namespace+"/"+name+" "+string(phase), func() (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, csv); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		last = string(csv.Status.Phase) + "/" + string(csv.Status.Reason) + ": " + csv.Status.Message
		return csv.Status.Phase == phase, nil
	}, func() string { return last })
	// OLM's timing varies most with the machine's load: each wait says how long it took.
	t.Logf("%s CSV %s/%s %s after %s", time.Now().Format("15:04:05"), namespace, name, phase, time.Since(start).Round(time.Second))
	return csv
}

// installPlanFor returns the InstallPlan in namespace that installs csv.
func installPlanFor(t *testing.T, ctx context.Context, c client.Client, namespace, csv string) *operatorsv1alpha1.InstallPlan {
	t.Helper()
	var plans operatorsv1alpha1.InstallPlanList
	require.NoError(t, c.List(ctx, &plans, client.InNamespace(namespace)))
	for i := range plans.Items {
		for _, name := range plans.Items[i].Spec.ClusterServiceVersionNames {
			if name == csv {
				return &plans.Items[i]
			}
		}
	}
	t.Fatalf("no InstallPlan in %s for %s", namespace, csv)
	return nil
}

// writeStandInCatalog writes a file-based catalog with a stand-in for the Apache operator's
// OperatorHub package: package flink-kubernetes-operator, channel alpha, one bundle whose CSV
// owns the flink.apache.org CRDs (taken from this project's bundle, as both serve the same
// API) and runs a pod that only sleeps. It returns the catalog's directory.
func writeStandInCatalog(t *testing.T, ourBundle string) string {
	t.Helper()
	crds := bundleObjects(t, ourBundle, "CustomResourceDefinition")
	var owned []operatorsv1alpha1.CRDDescription
	props := []map[string]any{}
	for _, crd := range crds {
		var def apiextensionsv1.CustomResourceDefinition
		raw, err := json.Marshal(crd.Object)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &def))
		for _, v := range def.Spec.Versions {
			if !v.Served {
				continue
			}
			owned = append(owned, operatorsv1alpha1.CRDDescription{Name: def.Name, Version: v.Name, Kind: def.Spec.Names.Kind, DisplayName: def.Spec.Names.Kind})
			props = append(props, map[string]any{"type": "olm.gvk", "value": map[string]string{"group": def.Spec.Group, "kind": def.Spec.Names.Kind, "version": v.Name}})
		}
		props = append(props, bundleObject(t, raw))
	}
	replicas := int32(1)
	labels := map[string]string{"app.kubernetes.io/name": apachePkg}
	csv := operatorsv1alpha1.ClusterServiceVersion{
		TypeMeta:   metav1.TypeMeta{APIVersion: operatorsv1alpha1.SchemeGroupVersion.String(), Kind: operatorsv1alpha1.ClusterServiceVersionKind},
		ObjectMeta: metav1.ObjectMeta{Name: apacheCSV},
		Spec: operatorsv1alpha1.ClusterServiceVersionSpec{
			DisplayName: "Flink Kubernetes Operator (stand-in)",
			InstallModes: []operatorsv1alpha1.InstallMode{
				{Type: operatorsv1alpha1.InstallModeTypeOwnNamespace, Supported: true},
				{Type: operatorsv1alpha1.InstallModeTypeSingleNamespace, Supported: true},
				{Type: operatorsv1alpha1.InstallModeTypeMultiNamespace, Supported: true},
				{Type: operatorsv1alpha1.InstallModeTypeAllNamespaces, Supported: true},
			},
			CustomResourceDefinitions: operatorsv1alpha1.CustomResourceDefinitions{Owned: owned},
			InstallStrategy: operatorsv1alpha1.NamedInstallStrategy{StrategyName: operatorsv1alpha1.InstallStrategyNameDeployment,
				StrategySpec: operatorsv1alpha1.StrategyDetailsDeployment{DeploymentSpecs: []operatorsv1alpha1.StrategyDeploymentSpec{{
					Name: apachePkg,
					Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
						Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
							Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "flink-kubernetes-operator", Image: apacheImage,
								Command: []string{"sleep"}, Args: []string{"infinity"}}}}}},
				}}}},
		},
	}
	raw, err := json.Marshal(csv)
	require.NoError(t, err)
	props = append(props, bundleObject(t, raw),
		map[string]any{"type": "olm.package", "value": map[string]string{"packageName": apachePkg, "version": "1.15.0"}})

	docs := []any{
		map[string]any{"schema": "olm.package", "name": apachePkg, "defaultChannel": "alpha"},
		map[string]any{"schema": "olm.channel", "package": apachePkg, "name": "alpha", "entries": []map[string]string{{"name": apacheCSV}}},
		map[string]any{"schema": "olm.bundle", "package": apachePkg, "name": apacheCSV, "image": "", "properties": props},
	}
	var out []string
	for _, d := range docs {
		b, err := yaml.Marshal(d)
		require.NoError(t, err)
		out = append(out, string(b))
	}
	dir := filepath.Join(t.TempDir(), "apache-catalog")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, apachePkg), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, apachePkg, "catalog.yaml"), []byte(strings.Join(out, "---\n")), 0o644))
	return dir
}

func bundleObject(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	return map[string]any{"type": "olm.bundle.object", "value": map[string]string{"data": base64.StdEncoding.EncodeToString(raw)}}
}
