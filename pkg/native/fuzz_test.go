package native

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
