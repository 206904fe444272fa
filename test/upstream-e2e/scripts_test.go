package upstreame2e

import (
	"archive/zip"
	"bufio"
	"crypto/sha1" //nolint:gosec // git's blob ids are SHA-1
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLocalizeIsUpstreamCIsSed: Localize makes of every data file what the sed commands of
// upstream's e2e.yaml make of it, run here with sed itself.
func TestLocalizeIsUpstreamCIsSed(t *testing.T) {
	if _, err := exec.LookPath("sed"); err != nil {
		t.Skip("no sed here")
	}
	const jarURL = "http://127.0.0.1:8080/flink-examples-streaming_2.12-1.15.3.jar"
	escaped := strings.NewReplacer("/", `\/`, "&", `\&`).Replace(jarURL)
	files, err := filepath.Glob(filepath.Join("upstream", "data", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		cmd := exec.Command("sed",
			"-e", "s/image: flink:.*/image: "+FlinkImage+"/",
			"-e", "s/flinkVersion: .*/flinkVersion: "+FlinkVersion+"/",
			"-e", "s/mode: .*/mode: "+Mode+"/",
			"-e", "s/STREAMING_EXAMPLES_JAR_URL/"+escaped+"/", f)
		want, err := cmd.Output()
		require.NoError(t, err, f)
		got := Localize(string(data), jarURL)
		assert.Equal(t, string(want), got, f)
	}
	// The substitutions do happen (a no-op Localize would match an input sed leaves alone).
	batch, err := os.ReadFile(filepath.Join("upstream", "data", "flinkdep-batch-cr.yaml"))
	require.NoError(t, err)
	assert.Contains(t, Localize(string(batch), jarURL), "'wget', '"+jarURL+"'")
	assert.NotContains(t, Localize("  image: flink:1.18\n", jarURL), "1.18")
}

// TestUpstreamCopiesAreUnchanged: every file under upstream/ has the git blob id NOTICE records
// from upstream's commit, and NOTICE records no file that is missing.
func TestUpstreamCopiesAreUnchanged(t *testing.T) {
	notice, err := os.Open("NOTICE")
	require.NoError(t, err)
	defer notice.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(notice)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 2 && len(fields[0]) == 40 {
			want[fields[1]] = fields[0]
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, want, "NOTICE lists the copies' blob ids")
	got := map[string]string{}
	require.NoError(t, filepath.WalkDir("upstream", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel("upstream", path)
		if err != nil {
			return err
		}
		got[filepath.ToSlash(rel)] = blobID(data)
		return nil
	}))
	assert.Equal(t, want, got)
}

// blobID is git's object id of a blob with data (git hash-object).
func blobID(data []byte) string {
	h := sha1.New() //nolint:gosec // git's blob ids are SHA-1
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return fmt.Sprintf("%x", h.Sum(nil))
}

// TestScriptsAreUpstreams: the runner runs every script of upstream/ but the logging framework's,
// each once, each existing.
func TestScriptsAreUpstreams(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("upstream", "test_*.sh"))
	require.NoError(t, err)
	var want []string
	for _, f := range files {
		if filepath.Base(f) != "test_logback_logging.sh" {
			want = append(want, filepath.Base(f))
		}
	}
	var got []string
	for _, s := range Scripts() {
		got = append(got, s.Name)
		assert.FileExists(t, filepath.Join("upstream", s.Name))
		assert.NotEmpty(t, s.Jar, s.Name)
		assert.Contains(t, []string{"flink-conf.yaml", "config.yaml"}, s.ConfigKey, s.Name)
	}
	assert.ElementsMatch(t, want, got)
}

// TestPrepareLocalizesOnlyTheData: the scripts are copied as they are, the data files localized.
func TestPrepareLocalizesOnlyTheData(t *testing.T) {
	dir := t.TempDir()
	const jarURL = "http://127.0.0.1:1/x.jar"
	require.NoError(t, Prepare("upstream", dir, jarURL))
	for _, name := range []string{"utils.sh", "test_batch_job.sh"} {
		orig, err := os.ReadFile(filepath.Join("upstream", name))
		require.NoError(t, err)
		copied, err := os.ReadFile(filepath.Join(dir, "e2e-tests", name))
		require.NoError(t, err)
		assert.Equal(t, orig, copied, name)
	}
	data, err := os.ReadFile(filepath.Join(dir, "e2e-tests", "data", "sessionjob-cr.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(data), "jarURI: "+jarURL)
	assert.NotContains(t, string(data), "STREAMING_EXAMPLES_JAR_URL")
}

// TestMinikubeStandIn: `minikube ip` prints the Ingress address, `minikube status` succeeds,
// anything else fails saying so; kubectl and yq are the tools given.
func TestMinikubeStandIn(t *testing.T) {
	dir := t.TempDir()
	kubectl := filepath.Join(dir, "real-kubectl")
	yq := filepath.Join(dir, "real-yq")
	for _, f := range []string{kubectl, yq} {
		require.NoError(t, os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755))
	}
	tools := filepath.Join(dir, "tools")
	require.NoError(t, WriteTools(tools, kubectl, yq, "127.0.0.2"))
	out, err := exec.Command(filepath.Join(tools, "minikube"), "ip").Output()
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.2\n", string(out))
	require.NoError(t, exec.Command(filepath.Join(tools, "minikube"), "status").Run())
	out, err = exec.Command(filepath.Join(tools, "minikube"), "start").CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "not available")
	for name, target := range map[string]string{"kubectl": kubectl, "yq": yq} {
		got, err := os.Readlink(filepath.Join(tools, name))
		require.NoError(t, err)
		assert.Equal(t, target, got)
	}
}

// TestImageExamplesHasTheStateMachineJob: the examples directory holds the distribution's jobs
// and StateMachineExample.jar, the module jar's classes with the job's Main-Class.
func TestImageExamplesHasTheStateMachineJob(t *testing.T) {
	dir := t.TempDir()
	dist := filepath.Join(dir, "dist")
	require.NoError(t, os.MkdirAll(dist, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dist, "WordCount.jar"), []byte("wc"), 0o644))
	module := filepath.Join(dir, "module.jar")
	f, err := os.Create(module)
	require.NoError(t, err)
	w := zip.NewWriter(f)
	// A directory entry written as jar tools write them: deflated, an empty stream.
	_, err = w.CreateHeader(&zip.FileHeader{Name: "META-INF/", Method: zip.Deflate})
	require.NoError(t, err)
	for name, content := range map[string]string{
		"META-INF/MANIFEST.MF": "Manifest-Version: 1.0\r\nMain-Class: some.Other\r\n\r\n",
		"org/apache/flink/streaming/examples/statemachine/StateMachineExample.class": "class",
	} {
		fw, err := w.Create(name)
		require.NoError(t, err)
		_, err = fw.Write([]byte(content))
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	require.NoError(t, f.Close())

	out := filepath.Join(dir, "examples")
	require.NoError(t, ImageExamples(dist, module, out))
	wc, err := os.ReadFile(filepath.Join(out, "WordCount.jar"))
	require.NoError(t, err)
	assert.Equal(t, "wc", string(wc))
	r, err := zip.OpenReader(filepath.Join(out, "StateMachineExample.jar"))
	require.NoError(t, err)
	defer r.Close()
	files := map[string]string{}
	for _, f := range r.File {
		data, err := readEntry(f)
		require.NoError(t, err)
		files[f.Name] = string(data)
	}
	assert.Equal(t, "class", files["org/apache/flink/streaming/examples/statemachine/StateMachineExample.class"])
	assert.Equal(t, "Manifest-Version: 1.0\r\nMain-Class: "+StateMachineClass+"\r\n\r\n", files["META-INF/MANIFEST.MF"])
}
