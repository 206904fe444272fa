//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/test/flinkcluster"
	"github.com/flink-operator/flink-operator/test/kubeenv"
	"github.com/flink-operator/flink-operator/test/nodeagent"
	"github.com/flink-operator/flink-operator/test/wait"
)

// exampleImagesFlink is the Flink version of the SQL and Python examples' images (their tag is
// 1.20, and the PyFlink environment `make examples` installs is bin/pyflink/<this version>).
const exampleImagesFlink = "1.20.3"

// exampleImages are the job images of examples/flink-sql-runner and examples/flink-python as
// the node agent runs them: the Flink image plus what their Dockerfiles add, from what `make
// examples` builds (the runner's jar in usrlib, PyFlink in a Python environment).
// s3PluginJar is the Flink image's S3 file system plugin in /opt/flink/opt (make flink-opt).
const s3PluginJar = "flink-s3-fs-presto-1.20.0.jar"

func exampleImages(root string) map[string]nodeagent.FlinkImage {
	return map[string]nodeagent.FlinkImage{
		// The image's optional jars, which a pod enables with ENABLE_BUILT_IN_PLUGINS
		// (TestStateInObjectStorage).
		"flink:" + exampleImagesFlink[:strings.LastIndex(exampleImagesFlink, ".")]: {Dirs: map[string]string{
			"/opt/flink/opt": filepath.Join(root, "bin", "flink-opt", exampleImagesFlink)}},
		"flink-sql-runner-example:": {Dirs: map[string]string{
			"/opt/flink/usrlib": filepath.Join(root, "bin", "examples", "flink-sql-runner", "usrlib")}},
		"flink-python-example:": {Dirs: map[string]string{"/opt/flink/usrlib": filepath.Join(root, "examples", "flink-python")},
			PythonEnv: filepath.Join(root, "bin", "pyflink", exampleImagesFlink)},
	}
}

// TestSQLAndPythonJobs runs the SQL runner and PyFlink examples on real Flink 1.20 to FINISHED
// and checks their results where a user sees them, in the TaskManager's stdout: the SQL job's
// script comes from a ConfigMap volume and has semicolons in a literal and in comments, so its
// one row proves the statements were split right; the Python job's rows went through a Python
// UDF in a worker beside the TaskManager.
func TestSQLAndPythonJobs(t *testing.T) {
	t.Parallel()
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	require.Contains(t, flinkcluster.Versions(t), exampleImagesFlink, "the examples' images run Flink %s", exampleImagesFlink)
	for _, built := range []string{"bin/examples/flink-sql-runner/usrlib/sql-runner.jar", "bin/pyflink/" + exampleImagesFlink + "/.installed"} {
		_, err := os.Stat(filepath.Join(root, built))
		require.NoError(t, err, "run `make examples`")
	}
	tests := []struct {
		path string
		want []string
	}{
		{path: "examples/flink-sql-runner/sql-runner.yaml", want: []string{"sql-runner> +I[orders; all of them, 1000, 500500]"}},
		{path: "examples/flink-python/python-example.yaml", want: []string{
			"python-example> +I[even, 50, 2550]", "python-example> +I[odd, 50, 2500]"}},
	}
	const ns = "e2e-sqlpy"
	ctx := context.Background()
	start := time.Now()
	// Both run at once: most of their time is JVM and Python start-up, which overlaps well.
	objs := make([][]client.Object, len(tests))
	keys := make([]client.ObjectKey, len(tests))
	for i, tt := range tests {
		objs[i] = exampleObjects(t, tt.path, ns)
		for _, o := range objs[i] {
			require.NoError(t, env.Client.Create(ctx, o))
			if _, ok := o.(*flinkv1beta1.FlinkDeployment); ok {
				keys[i] = client.ObjectKeyFromObject(o)
			}
		}
	}
	// Generous: JVM and Python start-up take minutes on a 2-core machine shared with other builds.
	for i, tt := range tests {
		key := keys[i]
		// A job whose main method fails crash-loops its JobManager (application mode): stop there.
		d := waitFor(t, key, "FINISHED or failed", 6*time.Minute-time.Since(start), func(d *flinkv1beta1.FlinkDeployment) bool {
			s := d.Status.JobStatus.State
			return s == flinkv1beta1.JobStatusFinished || s == flinkv1beta1.JobStatusFailed ||
				strings.Contains(d.Status.Error, "CrashLoopBackOff")
		})
		require.Equal(t, flinkv1beta1.JobStatusFinished, d.Status.JobStatus.State, "%s: error: %s", key.Name, d.Status.Error)
		out := taskManagerStdout(t, key)
		for _, w := range tt.want {
			require.Contains(t, out, w, "%s: the job's result in the TaskManager's stdout", key.Name)
		}
	}
	logf(t, "both jobs FINISHED with their results in %s", time.Since(start).Round(time.Second))
	for i := range tests {
		for _, o := range objs[i] {
			require.NoError(t, env.Client.Delete(ctx, o))
		}
	}
	deadline := time.Now().Add(time.Minute)
	for _, key := range keys {
		wait.For(t, time.Until(deadline), key.Name+" deleted", func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, key, &flinkv1beta1.FlinkDeployment{}))
		})
		requireNoPods(t, key)
	}
	logf(t, "done in %s", time.Since(start).Round(time.Second))
}

// exampleObjects loads the ConfigMaps and the FlinkDeployment of a multi-document example.
func exampleObjects(t *testing.T, path, namespace string) []client.Object {
	t.Helper()
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, path))
	require.NoError(t, err)
	require.NoError(t, env.Namespace(context.Background(), namespace))
	var out []client.Object
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		var tm metav1.TypeMeta
		require.NoError(t, yaml.Unmarshal(doc, &tm), path)
		var o client.Object
		switch tm.Kind {
		case "ConfigMap":
			o = &corev1.ConfigMap{}
		case "FlinkDeployment":
			o = &flinkv1beta1.FlinkDeployment{}
		default:
			t.Fatalf("%s: unexpected kind %q", path, tm.Kind)
		}
		require.NoError(t, yaml.UnmarshalStrict(doc, o), path)
		o.SetNamespace(namespace)
		out = append(out, o)
	}
	return out
}

// taskManagerStdout is what the cluster's TaskManager containers wrote to stdout (kubectl logs).
func taskManagerStdout(t *testing.T, key client.ObjectKey) string {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(env.Dir, "node", "pods", key.Namespace+"_"+key.Name+"-taskmanager-*_*", "logs", "flink-main-container.out"))
	require.NoError(t, err)
	require.NotEmpty(t, logs, "%s: no TaskManager ran", key.Name)
	var b strings.Builder
	for _, l := range logs {
		data, err := os.ReadFile(l)
		require.NoError(t, err)
		b.Write(data)
	}
	return b.String()
}
