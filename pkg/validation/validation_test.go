package validation

import (
	"context"
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/test/yamlmerge"
)

const validDeployment = `
metadata: {name: orders, namespace: team-a}
spec:
  image: flink:1.20
  flinkVersion: v1_20
  serviceAccount: flink
  flinkConfiguration: {state.checkpoints.dir: "s3://b/cp", state.savepoints.dir: "s3://b/sp"}
  jobManager: {resource: {memory: 2048m, cpu: 1}}
  taskManager: {resource: {memory: 2048m, cpu: 1}}
  job: {jarURI: "local:///opt/flink/job.jar", parallelism: 2, upgradeMode: savepoint}
`

// patched returns validDeployment with patch merged over it (JSON merge semantics).
func patched(t *testing.T, base, patch string) *flinkv1beta1.FlinkDeployment {
	t.Helper()
	var b, p map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(base), &b))
	require.NoError(t, yaml.Unmarshal([]byte(patch), &p))
	raw, err := yaml.Marshal(yamlmerge.Merge(b, p))
	require.NoError(t, err)
	dep := &flinkv1beta1.FlinkDeployment{}
	require.NoError(t, yaml.UnmarshalStrict(raw, dep))
	return dep
}

func messages(errs field.ErrorList) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

func TestValidateDeployment(t *testing.T) {
	tests := []struct {
		name  string
		patch string
		want  []string
	}{
		{name: "valid", patch: `{}`},
		{name: "name too long and upper case", patch: `{metadata: {name: Orders-with-a-name-that-is-far-too-long-for-flink-xx}}`,
			want: []string{`metadata.name: Invalid value: "Orders-with-a-name-that-is-far-too-long-for-flink-xx": lowercase letters, digits and '-', starting with a letter, ending with a letter or digit, at most 45 characters`}},
		{name: "flinkVersion and serviceAccount missing", patch: `{spec: {flinkVersion: null, serviceAccount: null}}`,
			want: []string{
				`spec.flinkVersion: Required value: one of v1_15, v1_16, v1_17, v1_18, v1_19, v1_20, v2_0, v2_1, v2_2, v2_3, v2_4`,
				`spec.serviceAccount: Required value: the service account of the Flink pods`}},
		{name: "unsupported old version", patch: `{spec: {flinkVersion: v1_14}}`,
			want: []string{`spec.flinkVersion: Unsupported value: "v1_14": supported values: "v1_15", "v1_16", "v1_17", "v1_18", "v1_19", "v1_20", "v2_0", "v2_1", "v2_2", "v2_3", "v2_4"`}},
		{name: "keys the operator owns", patch: `{spec: {flinkConfiguration: {kubernetes.cluster-id: x, kubernetes: {namespace: y}}}}`,
			want: []string{
				`spec.flinkConfiguration[kubernetes.namespace]: Forbidden: set by the operator from the resource's name and namespace`,
				`spec.flinkConfiguration[kubernetes.cluster-id]: Forbidden: set by the operator from the resource's name and namespace`}},
		{name: "padded keys the operator owns (Flink trims keys)", patch: "{spec: {flinkConfiguration: {\"kubernetes.cluster-id \": x, \"\\tkubernetes.namespace\": y}}}",
			want: []string{
				"spec.flinkConfiguration[\tkubernetes.namespace]: Forbidden: set by the operator from the resource's name and namespace",
				`spec.flinkConfiguration[kubernetes.cluster-id ]: Forbidden: set by the operator from the resource's name and namespace`}},
		{name: "flink-conf.yaml entries that would set another key", patch: "{spec: {flinkVersion: v1_17, flinkConfiguration: {a: \"x\\rhigh-availability.type: none\", \"b \": y, c: \"d: e\"}}}",
			want: []string{
				`spec.flinkConfiguration[a]: Invalid value: values may not contain line breaks (\n or \r) in flink-conf.yaml (Flink 1.18 and older): each line is read as a separate key`,
				`spec.flinkConfiguration[b ]: Invalid value: keys may not begin or end with spaces or control characters in flink-conf.yaml (Flink 1.18 and older): Flink would read it as "b"`}},
		{name: "config.yaml quotes line breaks", patch: "{spec: {flinkConfiguration: {a: \"x\\ry: z\"}}}"},
		{name: "config.yaml cannot keep YAML's extra line separators", patch: "{spec: {flinkConfiguration: {a: \"x\\u2028y\"}}}",
			want: []string{`spec.flinkConfiguration[a]: Invalid value: keys and values may not contain control characters or line separators (here U+2028) in config.yaml: YAML cannot carry them as written`}},
		{name: "rollback without HA", patch: `{spec: {flinkConfiguration: {kubernetes.operator.deployment.rollback.enabled: "true"}}}`,
			want: []string{`spec.flinkConfiguration[kubernetes.operator.deployment.rollback.enabled]: Invalid value: "true": rollback needs high availability (high-availability.type: kubernetes)`}},
		{name: "health check spelled in capitals, recovery off in capitals", patch: `{spec: {flinkConfiguration: {kubernetes.operator.cluster.health-check.enabled: "TRUE", kubernetes.operator.jm-deployment-recovery.enabled: "FALSE"}}}`,
			want: []string{`spec.flinkConfiguration[kubernetes.operator.cluster.health-check.enabled]: Invalid value: "TRUE": kubernetes.operator.jm-deployment-recovery.enabled must be enabled for health checks`}},
		{name: "an operator option of the wrong type", patch: `{spec: {flinkConfiguration: {kubernetes.operator.job.restart.failed: "yes", kubernetes.operator.deployment.readiness.timeout: "soon"}}}`,
			want: []string{
				`spec.flinkConfiguration[kubernetes.operator.deployment.readiness.timeout]: Invalid value: "soon": must be a duration: "soon" is not a duration: want a number with an optional unit (ms, s, min, h, d)`,
				`spec.flinkConfiguration[kubernetes.operator.job.restart.failed]: Invalid value: "yes": must be a boolean: "yes" is not a boolean: want true or false`}},
		{name: "health check without deployment recovery", patch: `{spec: {flinkConfiguration: {kubernetes.operator.cluster.health-check.enabled: "true", kubernetes.operator.jm-deployment-recovery.enabled: "false"}}}`,
			want: []string{`spec.flinkConfiguration[kubernetes.operator.cluster.health-check.enabled]: Invalid value: "true": kubernetes.operator.jm-deployment-recovery.enabled must be enabled for health checks`}},
		{name: "periodic snapshots: durations and cron are fine", patch: `{spec: {flinkConfiguration: {kubernetes.operator.periodic.savepoint.interval: "6 h", kubernetes.operator.periodic.checkpoint.interval: "0 0 * * * ?"}}}`},
		{name: "periodic snapshot interval that is neither", patch: `{spec: {flinkConfiguration: {kubernetes.operator.periodic.checkpoint.interval: "every day"}}}`,
			want: []string{`spec.flinkConfiguration[kubernetes.operator.periodic.checkpoint.interval]: Invalid value: "every day": a duration (e.g. 1 h) or a Quartz cron expression (e.g. 0 0 * * * ?): cron "every day": want 6 or 7 fields (second minute hour day-of-month month day-of-week [year]), got 2`}},
		{name: "autoscaler ranges", patch: `{spec: {flinkConfiguration: {job.autoscaler.target.utilization: "1.5", job.autoscaler.scale-down.max-factor: lots}}}`,
			want: []string{
				`spec.flinkConfiguration[job.autoscaler.target.utilization]: Invalid value: "1.5": must be a number from 0 to 1`,
				`spec.flinkConfiguration[job.autoscaler.scale-down.max-factor]: Invalid value: "lots": must be a number from 0 to 1`}},
		{name: "bad ingress template", patch: `{spec: {ingress: {template: "{{name}}.{{cluster}}.example.com"}}}`,
			want: []string{`spec.ingress.template: Invalid value: "{{name}}.{{cluster}}.example.com": "{{name}}.{{cluster}}.example.com" has placeholders other than {{name}} and {{namespace}}`}},
		{name: "unknown log file", patch: `{spec: {logConfiguration: {log4j.properties: x}}}`,
			want: []string{`spec.logConfiguration[log4j.properties]: Unsupported value: "log4j.properties": supported values: "log4j-console.properties", "logback-console.xml"`}},
		{name: "stateful upgrades need directories", patch: `{spec: {flinkConfiguration: null, job: {upgradeMode: savepoint}}}`,
			want: []string{
				`spec.flinkConfiguration[execution.checkpointing.dir]: Required value: upgradeMode savepoint needs a checkpoint directory (execution.checkpointing.dir or state.checkpoints.dir)`,
				`spec.flinkConfiguration[execution.checkpointing.savepoint-dir]: Required value: upgradeMode savepoint needs a savepoint directory (execution.checkpointing.savepoint-dir or state.savepoints.dir)`}},
		{name: "manual savepoint needs a directory", patch: `{spec: {flinkConfiguration: null, job: {upgradeMode: stateless, savepointTriggerNonce: 1}}}`,
			want: []string{`spec.flinkConfiguration[execution.checkpointing.savepoint-dir]: Required value: spec.job.savepointTriggerNonce needs a savepoint directory (execution.checkpointing.savepoint-dir or state.savepoints.dir)`}},
		{name: "periodic savepoints need a directory", patch: `{spec: {flinkConfiguration: {state.savepoints.dir: null, kubernetes.operator.periodic.savepoint.interval: 1h}, job: {upgradeMode: stateless}}}`,
			want: []string{`spec.flinkConfiguration[execution.checkpointing.savepoint-dir]: Required value: kubernetes.operator.periodic.savepoint.interval needs a savepoint directory (execution.checkpointing.savepoint-dir or state.savepoints.dir)`}},
		{name: "parallelism needed without taskManager replicas", patch: `{spec: {job: {parallelism: 0}}}`,
			want: []string{`spec.job.parallelism: Invalid value: 0: must be at least 1 unless spec.taskManager.replicas is set`}},
		{name: "parallelism from replicas", patch: `{spec: {job: {parallelism: 0}, taskManager: {replicas: 2}}}`},
		{name: "memory missing everywhere", patch: `{spec: {jobManager: {resource: {memory: null}}, taskManager: null}}`,
			want: []string{
				`spec.jobManager.resource.memory: Required value: the jobmanager's memory: set spec.jobManager.resource.memory, spec.jobManager.resources, or jobmanager.memory.process.size in spec.flinkConfiguration`,
				`spec.taskManager.resource.memory: Required value: the taskmanager's memory: set spec.taskManager.resource.memory, spec.taskManager.resources, or taskmanager.memory.process.size in spec.flinkConfiguration`}},
		{name: "memory from configuration", patch: `{spec: {jobManager: null, taskManager: null, flinkConfiguration: {jobmanager.memory.process.size: 1g, taskmanager.memory.flink.size: 1g}, job: {upgradeMode: stateless}}}`},
		{name: "bad quantities", patch: `{spec: {jobManager: {resource: {cpu: 0, memory: lots, ephemeralStorage: huge}}, taskManager: {resource: null, resources: {requests: {memory: 2Gi, cpu: "2"}, limits: {memory: 1Gi, cpu: "0"}}}}}`,
			want: []string{
				`spec.jobManager.resource.cpu: Invalid value: 0: must be greater than 0`,
				`spec.jobManager.resource.memory: Invalid value: "lots": a Flink memory size (2048m, 1g) or a Kubernetes quantity (2Gi)`,
				`spec.jobManager.resource.ephemeralStorage: Invalid value: "huge": a Kubernetes quantity, e.g. 10Gi`,
				`spec.taskManager.resources.limits[cpu]: Invalid value: "0": must be greater than 0`,
				`spec.taskManager.resources.requests[cpu]: Invalid value: "2": must not exceed the limit 0`,
				`spec.taskManager.resources.requests[memory]: Invalid value: "2Gi": must not exceed the limit 1Gi`}},
		{name: "JobManager replicas need HA", patch: `{spec: {jobManager: {replicas: 2}}}`,
			want: []string{`spec.jobManager.replicas: Invalid value: 2: more than one JobManager needs high availability (high-availability.type: kubernetes)`}},
		{name: "JobManager replicas with HA", patch: `{spec: {jobManager: {replicas: 2}, flinkConfiguration: {high-availability.type: kubernetes, high-availability.storageDir: "s3://ha"}}}`},
		{name: "canaries are not validated", patch: `{metadata: {labels: {flink.apache.org/canary: "true"}}, spec: {serviceAccount: null}}`},
	}
	v := &Validator{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := messages(v.ValidateDeployment(patched(t, validDeployment, tt.patch), nil))
			if len(tt.want) == 0 {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func deployedAs(t *testing.T, spec string) *flinkv1beta1.FlinkDeployment {
	t.Helper()
	old := patched(t, validDeployment, spec)
	raw, err := flinkv1beta1.EncodeReconciledSpec(old.Spec, false)
	require.NoError(t, err)
	old.Status.ReconciliationStatus.LastReconciledSpec = raw
	return old
}

func TestValidateDeploymentUpdate(t *testing.T) {
	tests := []struct {
		name          string
		deployed, now string
		want          []string
	}{
		{name: "parallelism change", deployed: `{}`, now: `{spec: {job: {parallelism: 4}}}`},
		{name: "application to session", deployed: `{}`, now: `{spec: {job: null}}`,
			want: []string{`spec.job: Forbidden: cannot turn an application cluster into a session cluster; create a new FlinkDeployment`}},
		{name: "session to application", deployed: `{spec: {job: null}}`, now: `{}`,
			want: []string{`spec.job: Forbidden: cannot turn a session cluster into an application cluster; create a new FlinkDeployment`}},
		{name: "native to standalone", deployed: `{}`, now: `{spec: {mode: standalone}}`,
			want: []string{`spec.mode: Forbidden: cannot change from native to standalone after the first deployment`}},
		{name: "explicit native is no change", deployed: `{}`, now: `{spec: {mode: native}}`},
		{name: "version change after a last-state suspend", deployed: `{spec: {job: {state: suspended, upgradeMode: last-state}}}`, now: `{spec: {flinkVersion: v2_0, job: {upgradeMode: last-state}}}`,
			want: []string{`spec.flinkVersion: Forbidden: cannot change from v1_20 to v2_0 while suspended with last-state: the job's state is in HA metadata of the old version; resume first, or upgrade with upgradeMode savepoint`}},
		{name: "version change after a savepoint suspend", deployed: `{spec: {job: {state: suspended, upgradeMode: savepoint}}}`, now: `{spec: {flinkVersion: v2_0}}`},
		{name: "redeploy without a savepoint", deployed: `{spec: {job: {savepointRedeployNonce: 1}}}`, now: `{spec: {job: {savepointRedeployNonce: 2}}}`,
			want: []string{`spec.job.initialSavepointPath: Required value: a savepoint redeploy (changed savepointRedeployNonce) restores from it`}},
	}
	v := &Validator{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := messages(v.ValidateDeployment(patched(t, validDeployment, tt.now), deployedAs(t, tt.deployed)))
			if len(tt.want) == 0 {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, tt.want, got)
		})
	}
	t.Run("never deployed: anything goes", func(t *testing.T) {
		old := patched(t, validDeployment, `{}`)
		assert.Empty(t, v.ValidateDeployment(patched(t, validDeployment, `{spec: {mode: standalone, job: null}}`), old))
	})
}

type fakeResolver map[string][]string

func (f fakeResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	var out []net.IPAddr
	for _, ip := range f[host] {
		out = append(out, net.IPAddr{IP: net.ParseIP(ip)})
	}
	return out, nil
}

func TestValidateSessionJob(t *testing.T) {
	session := patched(t, validDeployment, `{metadata: {name: session}, spec: {job: null}}`)
	application := patched(t, validDeployment, `{metadata: {name: app}}`)
	job := func(doc string) *flinkv1beta1.FlinkSessionJob {
		j := &flinkv1beta1.FlinkSessionJob{}
		require.NoError(t, yaml.UnmarshalStrict([]byte(doc), j))
		return j
	}
	v := &Validator{Resolver: fakeResolver{"repo.example.com": {"93.184.216.34"}, "internal.example.com": {"10.1.2.3"}}}
	tests := []struct {
		name    string
		job     string
		old     string
		session *flinkv1beta1.FlinkDeployment
		want    []string
	}{
		{name: "valid", job: `{metadata: {name: j}, spec: {deploymentName: session, job: {jarURI: "https://repo.example.com/j.jar", upgradeMode: savepoint}}}`, session: session},
		{name: "session not there yet", job: `{metadata: {name: j}, spec: {deploymentName: later, job: {jarURI: "https://repo.example.com/j.jar"}}}`},
		{name: "missing everything", job: `{metadata: {name: j}, spec: {}}`,
			want: []string{`spec.deploymentName: Required value: the session FlinkDeployment (same namespace) to run on`, `spec.job: Required value: the job to run`}},
		{name: "scheme not allowed", job: `{metadata: {name: j}, spec: {deploymentName: s, job: {jarURI: "ftp://x/j.jar"}}}`,
			want: []string{`spec.job.jarURI: Unsupported value: "ftp://x/j.jar": supported values: "https://..."`}},
		{name: "jar from a private address", job: `{metadata: {name: j}, spec: {deploymentName: s, job: {jarURI: "https://internal.example.com/j.jar"}}}`,
			want: []string{`spec.job.jarURI: Invalid value: "https://internal.example.com/j.jar": host internal.example.com is on a loopback, link-local, private or multicast address (10.1.2.3); jars are fetched only from public hosts`}},
		{name: "jar from loopback", job: `{metadata: {name: j}, spec: {deploymentName: s, job: {jarURI: "https://127.0.0.1:8080/j.jar"}}}`,
			want: []string{`spec.job.jarURI: Invalid value: "https://127.0.0.1:8080/j.jar": host 127.0.0.1 is on a loopback, link-local, private or multicast address (127.0.0.1); jars are fetched only from public hosts`}},
		{name: "runs on an application cluster", job: `{metadata: {name: j}, spec: {deploymentName: app, job: {jarURI: "https://repo.example.com/j.jar"}}}`, session: application,
			want: []string{`spec.deploymentName: Invalid value: "app": names an application cluster (it has spec.job); session jobs need a FlinkDeployment without job`}},
		{name: "job rules on the merged configuration", job: `{metadata: {name: j}, spec: {deploymentName: session, flinkConfiguration: {state.savepoints.dir: ""}, job: {jarURI: "https://repo.example.com/j.jar", upgradeMode: savepoint}}}`, session: session,
			want: []string{`spec.flinkConfiguration[execution.checkpointing.savepoint-dir]: Required value: upgradeMode savepoint needs a savepoint directory (execution.checkpointing.savepoint-dir or state.savepoints.dir)`}},
		{name: "rollback without HA: a session job rolls back from its own checkpoints and savepoints", job: `{metadata: {name: j}, spec: {deploymentName: session, flinkConfiguration: {kubernetes.operator.deployment.rollback.enabled: "true"}, job: {jarURI: "https://repo.example.com/j.jar"}}}`, session: session},
		{name: "deploymentName is immutable", job: `{metadata: {name: j}, spec: {deploymentName: other, job: {jarURI: "https://repo.example.com/j.jar"}}}`,
			old:  `{metadata: {name: j}, spec: {deploymentName: session, job: {jarURI: "https://repo.example.com/j.jar"}}}`,
			want: []string{`spec.deploymentName: Forbidden: cannot move a job from "session" to "other"; create a new FlinkSessionJob`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var old *flinkv1beta1.FlinkSessionJob
			if tt.old != "" {
				old = job(tt.old)
			}
			got := messages(v.ValidateSessionJob(context.Background(), job(tt.job), old, tt.session))
			if len(tt.want) == 0 {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, tt.want, got)
		})
	}
	t.Run("jar hosts in the allowed networks pass, others are still refused", func(t *testing.T) {
		// The fetcher downloads from --artifact-allowed-networks (upstream's
		// disallow-restricted-hosts: false), so the validator must let such jars through too:
		// an in-cluster repository, or the loopback jar server a migrated session job names.
		inCluster := &Validator{AllowedJarSchemes: []string{"https", "http"},
			Resolver:        fakeResolver{"internal.example.com": {"10.1.2.3"}, "other.example.com": {"10.9.9.9"}},
			AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("127.0.0.0/8")}}
		for _, uri := range []string{"https://internal.example.com/j.jar", "http://127.0.0.1:34259/TopSpeedWindowing.jar", "https://[::ffff:10.1.2.3]/j.jar"} {
			assert.Empty(t, inCluster.ValidateSessionJob(context.Background(), job(`{metadata: {name: j}, spec: {deploymentName: s, job: {jarURI: "`+uri+`"}}}`), nil, nil), uri)
		}
		assert.Equal(t, []string{`spec.job.jarURI: Invalid value: "https://other.example.com/j.jar": host other.example.com is on a loopback, link-local, private or multicast address (10.9.9.9); jars are fetched only from public hosts`},
			messages(inCluster.ValidateSessionJob(context.Background(), job(`{metadata: {name: j}, spec: {deploymentName: s, job: {jarURI: "https://other.example.com/j.jar"}}}`), nil, nil)))
	})
	t.Run("allowed schemes are configurable", func(t *testing.T) {
		local := &Validator{AllowedJarSchemes: []string{"https", "file", "local"}}
		assert.Empty(t, local.ValidateSessionJob(context.Background(), job(`{metadata: {name: j}, spec: {deploymentName: s, job: {jarURI: "file:///jobs/j.jar"}}}`), nil, nil))
	})
}

func TestValidateSnapshot(t *testing.T) {
	snap := func(doc string) *flinkv1beta1.FlinkStateSnapshot {
		s := &flinkv1beta1.FlinkStateSnapshot{}
		require.NoError(t, yaml.UnmarshalStrict([]byte(doc), s))
		return s
	}
	existing := func(kind flinkv1beta1.JobKind, name string) (bool, error) { return name == "orders", nil }
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{name: "savepoint", doc: `{spec: {jobReference: {kind: FlinkDeployment, name: orders}, savepoint: {}}}`},
		{name: "neither", doc: `{spec: {jobReference: {kind: FlinkDeployment, name: orders}}}`,
			want: []string{`spec: Required value: exactly one of savepoint and checkpoint`}},
		{name: "both", doc: `{spec: {jobReference: {kind: FlinkDeployment, name: orders}, savepoint: {}, checkpoint: {}}}`,
			want: []string{`spec.checkpoint: Forbidden: exactly one of savepoint and checkpoint may be set`}},
		{name: "no reference", doc: `{spec: {checkpoint: {}}}`,
			want: []string{`spec.jobReference.kind: Required value: FlinkDeployment or FlinkSessionJob`, `spec.jobReference.name: Required value: the resource (same namespace) whose job to snapshot`}},
		{name: "reference to nothing", doc: `{spec: {jobReference: {kind: FlinkSessionJob, name: gone}, checkpoint: {}}}`,
			want: []string{`spec.jobReference.name: Not found: "FlinkSessionJob gone"`}},
		{name: "completed snapshots of deleted jobs stay valid", doc: `{spec: {jobReference: {kind: FlinkSessionJob, name: gone}, checkpoint: {}}, status: {state: COMPLETED}}`},
		{name: "existing savepoint needs no reference", doc: `{spec: {savepoint: {alreadyExists: true, path: "s3://sp/1"}}}`},
		{name: "existing savepoint needs a path", doc: `{spec: {savepoint: {alreadyExists: true}}}`,
			want: []string{`spec.savepoint.path: Required value: the path of the existing savepoint (alreadyExists: true)`}},
	}
	v := &Validator{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := messages(v.ValidateSnapshot(snap(tt.doc), existing))
			if len(tt.want) == 0 {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, tt.want, got)
		})
	}
}
