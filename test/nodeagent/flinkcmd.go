package nodeagent

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/flink-operator/flink-operator/test/flinkcluster"
)

// entrypoint is what a Flink image's command line starts.
type entrypoint struct {
	role      string // jobmanager or taskmanager (selects the memory calculation)
	mainClass string
	args      []string
}

// flinkEntrypoint interprets a Flink container's command and arguments as the image's
// /docker-entrypoint.sh does. The Flink image's own scripts are not in the PyPI
// distribution, so the agent starts the classes they would start.
func flinkEntrypoint(words []string) (entrypoint, error) {
	if len(words) > 0 && strings.HasSuffix(words[0], "docker-entrypoint.sh") {
		words = words[1:]
	}
	if len(words) >= 3 && (words[0] == "bash" || words[0] == "sh" || words[0] == "/bin/bash" || words[0] == "/bin/sh") && words[1] == "-c" {
		split, err := shellWords(words[2])
		if err != nil {
			return entrypoint{}, err
		}
		words = append(split, words[3:]...)
	}
	if len(words) == 0 {
		return entrypoint{}, fmt.Errorf("no command: the Flink image needs one of jobmanager, taskmanager, standalone-job, kubernetes-jobmanager.sh, kubernetes-taskmanager.sh")
	}
	rest := words[1:]
	switch filepath.Base(words[0]) {
	case "jobmanager":
		return entrypoint{"jobmanager", "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint", rest}, nil
	case "standalone-job":
		return entrypoint{"jobmanager", "org.apache.flink.container.entrypoint.StandaloneApplicationClusterEntryPoint", rest}, nil
	case "taskmanager":
		return entrypoint{"taskmanager", "org.apache.flink.runtime.taskexecutor.TaskManagerRunner", rest}, nil
	case "kubernetes-jobmanager.sh":
		if len(rest) == 0 {
			return entrypoint{}, fmt.Errorf("kubernetes-jobmanager.sh needs kubernetes-session or kubernetes-application")
		}
		switch rest[0] {
		case "kubernetes-session":
			return entrypoint{"jobmanager", "org.apache.flink.kubernetes.entrypoint.KubernetesSessionClusterEntrypoint", rest[1:]}, nil
		case "kubernetes-application":
			return entrypoint{"jobmanager", "org.apache.flink.kubernetes.entrypoint.KubernetesApplicationClusterEntrypoint", rest[1:]}, nil
		}
		return entrypoint{}, fmt.Errorf("kubernetes-jobmanager.sh: unknown target %q", rest[0])
	case "kubernetes-taskmanager.sh":
		return entrypoint{"taskmanager", "org.apache.flink.kubernetes.taskmanager.KubernetesTaskExecutorRunner", rest}, nil
	}
	return entrypoint{}, fmt.Errorf("command %q is not one of the Flink image's entrypoints", strings.Join(words, " "))
}

// shellWords splits a bash -c string into words (quotes and backslashes; no expansion).
func shellWords(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord, quote := false, rune(0)
	for i := 0; i < len(s); i++ {
		ch := rune(s[i])
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			} else if ch == '\\' && quote == '"' && i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			} else {
				cur.WriteRune(ch)
			}
		case ch == '\'' || ch == '"':
			quote, inWord = ch, true
		case ch == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case ch == ' ' || ch == '\t' || ch == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(ch)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

var imageVersion = regexp.MustCompile(`:(?:v)?(\d+)\.(\d+)`)

// distForImage picks the installed distribution for a Flink image: the newest one with the
// image tag's major and minor version when one is installed (flink:1.18 runs 1.18.x, which the
// migration test needs for the Apache operator 1.7.0), else the newest one with its major
// version, or the newest of all for an unversioned tag.
func distForImage(image string, dists []flinkcluster.Dist) (flinkcluster.Dist, error) {
	name := image
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	if !strings.Contains(strings.ToLower(name), "flink") {
		return flinkcluster.Dist{}, fmt.Errorf("image %q is not a Flink image; the local node agent runs only Flink containers", image)
	}
	sorted := append([]flinkcluster.Dist(nil), dists...)
	sort.Slice(sorted, func(i, j int) bool { return versionLess(sorted[j].Version, sorted[i].Version) })
	m := imageVersion.FindStringSubmatch(name)
	if m == nil {
		return sorted[0], nil
	}
	for _, prefix := range []string{m[1] + "." + m[2] + ".", m[1] + "."} {
		for _, d := range sorted {
			if strings.HasPrefix(d.Version, prefix) {
				return d, nil
			}
		}
	}
	return flinkcluster.Dist{}, fmt.Errorf("image %q: no Flink %s.x distribution installed", image, m[1])
}

func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, _ := strconv.Atoi(as[i])
		y, _ := strconv.Atoi(bs[i])
		if x != y {
			return x < y
		}
	}
	return len(as) < len(bs)
}

// pathRewrite maps a container path prefix to a local directory.
type pathRewrite struct{ from, to string }

// rewriter replaces container paths by local ones, longest prefix first.
func rewriter(rw []pathRewrite) *strings.Replacer {
	sort.SliceStable(rw, func(i, j int) bool { return len(rw[i].from) > len(rw[j].from) })
	var pairs []string
	for _, p := range rw {
		if p.from != "" && p.from != "/" {
			pairs = append(pairs, p.from, p.to)
		}
	}
	return strings.NewReplacer(pairs...)
}

// imageDefaultConfig is the configuration the Flink image ships in /opt/flink/conf, used
// when nothing is mounted there.
var imageDefaultConfig = map[string]any{
	"jobmanager.rpc.address": "localhost", "jobmanager.rpc.port": "6123",
	"jobmanager.memory.process.size": "1600m", "taskmanager.memory.process.size": "1728m",
	"taskmanager.numberOfTaskSlots": "1", "parallelism.default": "1",
}

// writeConfig writes the Flink configuration a container reads: the mounted file with
// container paths rewritten (or the image's default one), then the agent's overrides (bind
// addresses of the pod's own loopback address, the kubeconfig), applied last.
func writeConfig(srcDir, dstDir string, rw *strings.Replacer, overrides map[string]string) error {
	if err := os.MkdirAll(dstDir, 0o755); err != nil {
		return err
	}
	entries, _ := os.ReadDir(srcDir)
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(srcDir, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dstDir, e.Name()), []byte(rw.Replace(string(data))), 0o644); err != nil {
			return err
		}
	}
	// flink-conf.yaml is read when it exists (≤1.20); config.yaml otherwise.
	legacy := filepath.Join(dstDir, "flink-conf.yaml")
	if data, err := os.ReadFile(legacy); err == nil {
		var b bytes.Buffer
		b.Write(data)
		b.WriteString("\n# node agent overrides\n")
		for _, k := range sortedKeys(overrides) {
			fmt.Fprintf(&b, "%s: %s\n", k, overrides[k])
		}
		return os.WriteFile(legacy, b.Bytes(), 0o644)
	}
	path := filepath.Join(dstDir, "config.yaml")
	conf := map[string]any{}
	if data, err := os.ReadFile(path); err == nil {
		if err := yaml.Unmarshal(data, &conf); err != nil {
			return fmt.Errorf("config.yaml: %w", err)
		}
	} else {
		for k, v := range imageDefaultConfig {
			conf[k] = v
		}
	}
	for k, v := range overrides {
		conf[k] = v
	}
	out, err := yaml.Marshal(conf)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}

// readConfigValue reads one flat key of the written configuration (for env.java.opts.*).
func readConfigValue(confDir, key string) string {
	for _, name := range []string{"flink-conf.yaml", "config.yaml"} {
		data, err := os.ReadFile(filepath.Join(confDir, name))
		if err != nil {
			continue
		}
		conf := map[string]any{}
		if name == "config.yaml" {
			if yaml.Unmarshal(data, &conf) != nil {
				return ""
			}
			if v, ok := conf[key]; ok {
				return fmt.Sprint(v)
			}
			return ""
		}
		val := ""
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == key {
				val = strings.TrimSpace(v)
			}
		}
		return val
	}
	return ""
}

// The places in the JVM's command line where flinkLauncher puts the JVM memory flags and the
// dynamic properties Flink's memory calculator printed.
const (
	jvmMemoryMarker         = "@nodeagent:jvm-memory@"
	dynamicPropertiesMarker = "@nodeagent:dynamic-properties@"
)

// flinkLauncher is a Flink container's program, standing in for the image's scripts
// (kubernetes-jobmanager.sh, taskmanager.sh, flink-console.sh): it runs Flink's memory
// calculator, then replaces itself with the JVM, given the flags and dynamic properties the
// calculator printed, word-split as those scripts split them. As in a Flink image, the
// calculator runs inside the container: the container's PID and start time are the launcher's,
// and the calculator's half second of JVM is part of the container's start, not something the
// node does before it. A calculator that fails makes the container exit 1 with its output in
// the container's log, as Flink's scripts do. Arguments: the number of words of the
// calculator's command line, those words, then the JVM's command line with the markers.
const flinkLauncher = `set -f
n=$1; shift
calc=("${@:1:n}"); shift "$n"
if ! out=$("${calc[@]}" 2>&1); then
  printf '%s\n' "$out" >&2
  echo "flink memory configuration: the memory calculator failed" >&2
  exit 1
fi
mapfile -t results < <(printf '%s\n' "$out" | sed -n 's/^BASH_JAVA_UTILS_EXEC_RESULT://p')
if [ "${#results[@]}" -lt 2 ]; then
  printf '%s\n' "$out" >&2
  echo "flink memory configuration: the memory calculator printed no result" >&2
  exit 1
fi
args=()
for a in "$@"; do
  case $a in
    ` + jvmMemoryMarker + `) args+=(${results[0]}) ;;
    ` + dynamicPropertiesMarker + `) args+=(${results[1]}) ;;
    *) args+=("$a") ;;
  esac
done
exec "${args[@]}"`

// memoryCalculator is the command line of Flink's memory calculator for a role (what the
// image's scripts run first): java is the JVM's path.
func memoryCalculator(java string, dist flinkcluster.Dist, role, confDir string, dynamic []string) ([]string, error) {
	cmd := "GET_TM_RESOURCE_PARAMS"
	if role == "jobmanager" {
		cmd = "GET_JM_RESOURCE_PARAMS"
	}
	calculatorClasspath, err := dist.MemoryCalculatorClasspath()
	if err != nil {
		return nil, err
	}
	words := append([]string{java, "-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"},
		dist.SharedArchiveFlags(flinkcluster.RoleMemoryCalculator)...)
	words = append(words, "-cp", calculatorClasspath,
		"org.apache.flink.runtime.util.bash.BashJavaUtils", cmd, "--configDir", confDir)
	return append(words, dynamic...), nil
}

// launcherArgs are flinkLauncher's arguments: the calculator's command line, then the JVM's.
func launcherArgs(calculator, jvm []string) []string {
	args := append([]string{"-c", flinkLauncher, "flink-launcher", strconv.Itoa(len(calculator))}, calculator...)
	return append(args, jvm...)
}

// dynamicProperties picks the -D properties out of entrypoint arguments.
func dynamicProperties(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "-D" && i+1 < len(args):
			out = append(out, "-D", args[i+1])
			i++
		case strings.HasPrefix(args[i], "-D") && len(args[i]) > 2:
			out = append(out, args[i])
		}
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// expandVars applies kubelet's $(VAR) expansion; $$ escapes.
func expandVars(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '$' && i+1 < len(s) {
			if s[i+1] == '$' {
				b.WriteByte('$')
				i++
				continue
			}
			if s[i+1] == '(' {
				if end := strings.IndexByte(s[i+2:], ')'); end >= 0 {
					name := s[i+2 : i+2+end]
					if v, ok := env[name]; ok {
						b.WriteString(v)
						i += 2 + end
						continue
					}
				}
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// containerEnv resolves a container's environment: literal values (with expansion of
// earlier variables) and downward-API, ConfigMap and Secret references.
func (r *podRunner) containerEnv(ctx context.Context, c corev1.Container) (map[string]string, []string, error) {
	env := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := env[k]; !ok {
			order = append(order, k)
		}
		env[k] = v
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			set(e.Name, expandVars(e.Value, env))
		case e.ValueFrom.FieldRef != nil:
			val, err := r.fieldValue(e.ValueFrom.FieldRef.FieldPath)
			if err != nil {
				return nil, nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
			set(e.Name, val)
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			cm, err := r.a.client.CoreV1().ConfigMaps(r.pod.Namespace).Get(ctx, ref.Name, metaGet)
			if err != nil {
				if ref.Optional != nil && *ref.Optional {
					continue
				}
				return nil, nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
			set(e.Name, cm.Data[ref.Key])
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			s, err := r.a.client.CoreV1().Secrets(r.pod.Namespace).Get(ctx, ref.Name, metaGet)
			if err != nil {
				if ref.Optional != nil && *ref.Optional {
					continue
				}
				return nil, nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
			set(e.Name, string(s.Data[ref.Key]))
		}
	}
	return env, order, nil
}

// annotationField matches the downward API's metadata.annotations['key'] and metadata.labels['key'].
var annotationField = regexp.MustCompile(`^metadata\.(annotations|labels)\['(.*)'\]$`)

// fieldValue is the value of a downward-API field of the pod.
func (r *podRunner) fieldValue(path string) (string, error) {
	switch path {
	case "status.podIP":
		return r.ip, nil
	case "status.hostIP":
		return "127.0.0.1", nil
	case "metadata.name":
		return r.pod.Name, nil
	case "metadata.namespace":
		return r.pod.Namespace, nil
	case "metadata.uid":
		return string(r.pod.UID), nil
	case "spec.nodeName":
		return r.pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return r.pod.Spec.ServiceAccountName, nil
	}
	if m := annotationField.FindStringSubmatch(path); m != nil {
		if m[1] == "annotations" {
			return r.pod.Annotations[m[2]], nil
		}
		return r.pod.Labels[m[2]], nil
	}
	return "", fmt.Errorf("field %s is not supported by the local node agent", path)
}
