package native

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// FuzzRenderConfigFile: no entry of flinkConfiguration sets another key of the rendered file.
// flink-conf.yaml (Flink 1.18 and older) is read back with parseLegacyConf, which follows
// Flink's legacy line parser: every key read must be a key of the configuration, read once,
// with its own value, or the rendering must refuse. config.yaml is read back as YAML: every
// key with the same string value, and no other key; only entries CheckYAMLEntry names are
// refused.
// Run longer with: go test ./pkg/native -run '^$' -fuzz FuzzRenderConfigFile -fuzztime 60s
func FuzzRenderConfigFile(f *testing.F) {
	for _, seed := range [][4]string{
		{"a", "x\rkubernetes.cluster-id: other", "b", "plain"},
		{"kubernetes.cluster-id ", "other", "z", "x\r\nkubernetes.namespace: other"},
		{"a: b", "c", "d#e", "f: g # h"},
		{"\tkubernetes.namespace", "x", "k", " spaced \v"},
		{"env.java.opts", `-Dx="a b" -Dy=1`, "pipeline.jars", "[file:///a.jar]"},
		{"yaml", "{a: 1}", "n", "0o17"},
		{"t", "true", "e", "- item"},
		{"key\u2028", "value\u0085", "", "empty key"},
	} {
		f.Add(seed[0], seed[1], seed[2], seed[3])
	}
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		for _, s := range []string{k1, v1, k2, v2} {
			if !utf8.ValidString(s) {
				t.Skip() // resources reach the operator as JSON: strings are UTF-8
			}
		}
		conf := Config{"kubernetes.cluster-id": "mine", "kubernetes.namespace": "ns", "high-availability.cluster-id": "mine"}
		conf[k1], conf[k2] = v1, v2

		if file, err := RenderConfigFile(conf, flinkv1beta1.FlinkVersion1_17); err == nil {
			checkLegacyRoundTrip(t, conf, file)
		} else if CheckLegacyEntry(k1, v1) == nil && CheckLegacyEntry(k2, v2) == nil {
			t.Fatalf("refused %v although every entry is fine: %v", conf, err)
		}

		file, err := RenderConfigFile(conf, flinkv1beta1.FlinkVersion1_19)
		if err != nil {
			if CheckYAMLEntry(k1, v1) == nil && CheckYAMLEntry(k2, v2) == nil {
				t.Fatalf("config.yaml: %v", err)
			}
			return
		}
		var back map[string]any
		if err := yaml.Unmarshal([]byte(file), &back); err != nil {
			t.Fatalf("config.yaml does not parse: %v\n%s", err, file)
		}
		if len(back) != len(conf) {
			t.Fatalf("config.yaml has %d keys, want %d:\n%s", len(back), len(conf), file)
		}
		for k, v := range conf {
			if back[k] != v {
				t.Fatalf("config.yaml reads %q as %#v, want %q:\n%s", k, back[k], v, file)
			}
		}
	})
}

// FuzzMergePods lays an operator-like generated pod over an arbitrary user template, as the
// builder does (OverlayPod, which calls MergePods): the merge never panics, and when it succeeds the
// operator's fields win (labels, including one taken from configuration; the main container's
// image, args and env; the service account; the configuration volume) while the user's other
// containers survive.
// Run longer with: go test ./pkg/native -run '^$' -fuzz FuzzMergePods -fuzztime 60s
func FuzzMergePods(f *testing.F) {
	for _, seed := range []struct {
		user         string
		label, value string
	}{
		{`{"metadata":{"labels":{"team":"a"}},"spec":{"containers":[{"name":"flink-main-container","image":"evil","args":["x"],"env":[{"name":"FLINK_ENV","value":"user"}]},{"name":"sidecar","image":"busybox"}],"volumes":[{"name":"flink-config-volume","emptyDir":{}}],"serviceAccountName":"admin"}}`, "extra", "v"},
		{`{"metadata":{"labels":{"$patch":"delete"}},"spec":{}}`, "$patch", "replace"},
		{`{"spec":{"containers":[{"name":"a"},{"name":"a"}],"initContainers":[{"name":"init"}]}}`, "app", "other"},
		{`{"spec":{"containers":[{"name":"flink-main-container","env":[{"name":"FLINK_ENV"},{"name":"FLINK_ENV","value":"2"}],"ports":[{"containerPort":8081}]}]}}`, "", ""},
		{`{"metadata":{"annotations":{"$retainKeys":"x"}},"spec":{"nodeSelector":{"$setElementOrder/containers":"y"}}}`, "l", "v"},
		{`null`, "k", "v"},
	} {
		f.Add([]byte(seed.user), seed.label, seed.value)
	}
	f.Fuzz(func(t *testing.T, userJSON []byte, label, value string) {
		var user *corev1.Pod
		if err := json.Unmarshal(userJSON, &user); err != nil || !utf8.ValidString(label) || !utf8.ValidString(value) {
			t.Skip() // labels from configuration come from JSON: UTF-8
		}
		labels := map[string]string{LabelApp: "demo", LabelComponent: ComponentJobManager, label: value}
		generated := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{
				ServiceAccountName: "flink",
				Containers: []corev1.Container{{Name: MainContainer, Image: "flink:1.20", Args: []string{"jobmanager"},
					Env: []corev1.EnvVar{{Name: "FLINK_ENV", Value: "operator"}}}},
				Volumes: []corev1.Volume{{Name: "flink-config-volume", VolumeSource: corev1.VolumeSource{
					ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "flink-config-demo"}}}}},
			},
		}
		merged, err := OverlayPod(user, generated)
		if err != nil {
			return // refusing is fine; what is built must be right
		}
		for k, v := range labels {
			if got, ok := merged.Labels[k]; !ok || got != v {
				t.Fatalf("label %q = %q (set %v), want %q; labels %v", k, got, ok, v, merged.Labels)
			}
		}
		if merged.Spec.ServiceAccountName != "flink" {
			t.Fatalf("service account %q", merged.Spec.ServiceAccountName)
		}
		main := findContainer(merged.Spec.Containers, MainContainer)
		if main == nil || main.Image != "flink:1.20" || len(main.Args) != 1 || main.Args[0] != "jobmanager" {
			t.Fatalf("main container %+v", main)
		}
		if env := findEnv(main.Env, "FLINK_ENV"); env == nil || env.Value != "operator" || env.ValueFrom != nil {
			t.Fatalf("FLINK_ENV %+v", env)
		}
		vol := findVolume(merged.Spec.Volumes, "flink-config-volume")
		if vol == nil || vol.ConfigMap == nil || vol.ConfigMap.Name != "flink-config-demo" || vol.EmptyDir != nil {
			t.Fatalf("config volume %+v", vol)
		}
		if user != nil {
			for _, c := range user.Spec.Containers {
				if findContainer(merged.Spec.Containers, c.Name) == nil {
					t.Fatalf("user container %q lost", c.Name)
				}
			}
		}
	})
}

func findContainer(list []corev1.Container, name string) *corev1.Container {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

func findEnv(list []corev1.EnvVar, name string) *corev1.EnvVar {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

func findVolume(list []corev1.Volume, name string) *corev1.Volume {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}
