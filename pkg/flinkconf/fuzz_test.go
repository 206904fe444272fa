package flinkconf

import (
	"testing"
	"unicode/utf8"

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
