// Package flinkconf is the Flink configuration model of a FlinkDeployment: the operator's
// default layering (base < namespace < Flink version < the resource's flinkConfiguration), the
// keys the operator derives from the spec, and the resulting effective configuration Flink
// gets, with its readers (ports, memory, durations) and its file formats. It builds no
// Kubernetes object (pkg/native renders those from it) and never talks to Flink.
package flinkconf

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// Defaults are the operator's default Flink configuration, layered as upstream:
// base < per-namespace < per-Flink-version, all under the resource's own flinkConfiguration.
type Defaults struct {
	// Base applies to every cluster.
	Base map[string]string
	// Namespace applies to clusters in that namespace.
	Namespace map[string]map[string]string
	// Version applies to clusters of a Flink version, in order.
	Version []VersionDefaults
	// Operator holds the operator options of the operator configuration (kubernetes.operator.*,
	// job.autoscaler.*): defaults of the per-resource options, never given to Flink.
	Operator map[string]string
}

// VersionDefaults apply to one Flink version, or to it and newer ones.
type VersionDefaults struct {
	Version  flinkv1beta1.FlinkVersion
	AndNewer bool
	Config   map[string]string
}

// Operator configuration prefixes that carry default Flink configuration (upstream's names):
//
//	kubernetes.operator.default-configuration.namespace.<ns>.<key>
//	kubernetes.operator.default-configuration.flink-version.<v1_20>[+].<key>
const (
	namespaceDefaultsPrefix = options.NamespaceDefaultsPrefix
	versionDefaultsPrefix   = options.VersionDefaultsPrefix
)

// DefaultsFromOperatorConfig splits the operator's flat configuration into Defaults: keys under
// the two prefixes above become namespace and version defaults, every other non-operator key is
// a base default.
func DefaultsFromOperatorConfig(conf map[string]string) (Defaults, error) {
	d := Defaults{Base: map[string]string{}, Namespace: map[string]map[string]string{}}
	versions := map[string]*VersionDefaults{}
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		v := conf[k]
		switch {
		case strings.HasPrefix(k, namespaceDefaultsPrefix):
			ns, key, ok := strings.Cut(strings.TrimPrefix(k, namespaceDefaultsPrefix), ".")
			if !ok || ns == "" || key == "" {
				return Defaults{}, fmt.Errorf("operator configuration key %q: want %s<namespace>.<flink key>", k, namespaceDefaultsPrefix)
			}
			if d.Namespace[ns] == nil {
				d.Namespace[ns] = map[string]string{}
			}
			d.Namespace[ns][key] = v
		case strings.HasPrefix(k, versionDefaultsPrefix):
			ver, key, ok := strings.Cut(strings.TrimPrefix(k, versionDefaultsPrefix), ".")
			andNewer := strings.HasSuffix(ver, "+")
			fv := flinkv1beta1.FlinkVersion(strings.TrimSuffix(ver, "+"))
			if !ok || key == "" || !isKnownVersion(fv) {
				return Defaults{}, fmt.Errorf("operator configuration key %q: want %s<v1_20>[+].<flink key>", k, versionDefaultsPrefix)
			}
			vd := versions[ver]
			if vd == nil {
				vd = &VersionDefaults{Version: fv, AndNewer: andNewer, Config: map[string]string{}}
				versions[ver] = vd
			}
			vd.Config[key] = v
		case isOperatorOnlyKey(k):
			// The operator's own settings never reach Flink; per-resource options default to them.
			if d.Operator == nil {
				d.Operator = map[string]string{}
			}
			d.Operator[k] = v
		default:
			d.Base[k] = v
		}
	}
	// "v1_18+" before "v1_20": broader ranges first, so the more specific setting wins.
	for _, ver := range slices.Sorted(maps.Keys(versions)) {
		d.Version = append(d.Version, *versions[ver])
	}
	slices.SortStableFunc(d.Version, func(a, b VersionDefaults) int { return compareVersions(a.Version, b.Version) })
	return d, nil
}

// isOperatorOnlyKey: these keys configure the operator and the autoscaler, never Flink.
func isOperatorOnlyKey(k string) bool {
	return options.IsOperatorKey(k)
}

// BuildOptions carry what the reconciler decided for this deployment attempt.
type BuildOptions struct {
	// JobID fixes the application job's id ($internal.pipeline.job-id).
	JobID string
	// RestorePath is the savepoint or checkpoint the job starts from. It is the only restore
	// path Flink gets: one in the user's flinkConfiguration never reaches it.
	RestorePath string
	// LastStateRestore renders upstream's last-state sentinel (LastStateSentinelPath) as the
	// restore path when RestorePath is empty. Flink reads a restore path only when its HA
	// checkpoint store holds no checkpoint for the job, and no file exists at the sentinel, so a
	// job whose HA metadata vanished between the operator's check and the JobManager's start
	// fails to start instead of starting with empty state.
	//
	// Set it as upstream does (ApplicationReconciler.deploy): only for a deploy that restores
	// through HA metadata (last-state upgrade, last-state resume, recovery of a lost
	// JobManager) AND when that metadata holds at least one completed checkpoint (HasHACheckpoint
	// after DeleteJobGraphs). Without a checkpoint the job has no state to lose and must be able
	// to start, so leave it false then; a savepoint to restore goes in RestorePath, which wins.
	// Upstream also records the sentinel as status.jobStatus.upgradeSavepointPath.
	LastStateRestore bool
	// AllowNonRestoredState: true lets the restore drop state no operator claims. Whether
	// Flink ignores unclaimed state is decided by spec.job.allowNonRestoredState when set, else
	// by this when true, else by the user's flinkConfiguration (as upstream).
	AllowNonRestoredState bool
	// Attempt names this deployment attempt on the JobManager Deployment
	// (AnnotationDeployAttempt); empty leaves it out.
	Attempt string
	// ResultStoreID names this deployment attempt's job (and, on Flink 2.3+, application)
	// result store under the HA storage directory. It must change with every deployment and
	// stay the same while one is retried (see resultStores). Build picks a random one when it
	// is empty (Cluster.ResultStoreID tells which); EffectiveConfig then leaves the stores out.
	ResultStoreID string
}

// Config is a flat Flink configuration.
type Config map[string]string

// Get returns a key's value or def.
func (c Config) Get(key, def string) string {
	if v, ok := c[key]; ok && v != "" {
		return v
	}
	return def
}

// Int returns a key's integer value or def; an unparsable value is an error naming the key.
func (c Config) Int(key string, def int) (int, error) {
	v, ok := c[key]
	if !ok || v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("flinkConfiguration %s: %q is not an integer", key, v)
	}
	return n, nil
}

// PortKey is a configuration key holding a port the cluster's containers and Services expose.
type PortKey struct {
	Key     string
	Default int32
}

// PortKeys are the ports Ports reads, in its order: REST, JobManager RPC, blob server,
// TaskManager RPC.
var PortKeys = []PortKey{
	{"rest.port", DefaultRESTPort}, {"jobmanager.rpc.port", DefaultRPCPort},
	{"blob.server.port", DefaultBlobPort}, {"taskmanager.rpc.port", DefaultTMRPCPort},
}

// Port reads a port number: 1 to 65535, what Kubernetes accepts as a container or Service port.
// A larger number must not wrap around into another port (the one the operator would dial
// differs from the one Flink listens on); Flink's port ranges and 0 ("any free port") name no
// port that could be exposed.
func (c Config) Port(key string, def int32) (int32, error) {
	n, err := c.Int(key, int(def))
	if err != nil {
		return 0, err
	}
	if n < 1 || n > 65535 {
		return 0, fmt.Errorf("flinkConfiguration %s: %d is not a port number (1 to 65535)", key, n)
	}
	return int32(n), nil
}

// Ports reads the PortKeys, in their order.
func Ports(c Config) ([]int32, error) {
	out := make([]int32, len(PortKeys))
	for i, p := range PortKeys {
		port, err := c.Port(p.Key, p.Default)
		if err != nil {
			return nil, err
		}
		out[i] = port
	}
	return out, nil
}

// HAEnabled reports whether Flink high availability is configured.
func (c Config) HAEnabled() bool {
	mode := c.Get("high-availability.type", c.Get("high-availability", "NONE"))
	return !strings.EqualFold(mode, "NONE")
}

// UserConfig is the configuration as the user and the operator's defaults set it, before the
// operator derives anything from the spec: built-in defaults < operator defaults < namespace
// defaults < version defaults < spec.flinkConfiguration. It still holds kubernetes.operator.*
// and job.autoscaler.* keys, which validation reads.
func UserConfig(dep *flinkv1beta1.FlinkDeployment, defaults Defaults) (Config, error) {
	conf := Config{
		// Upstream's defaults for every cluster, below everything a user sets.
		"kubernetes.rest-service.exposed.type": "ClusterIP",
		"web.cancel.enable":                    "false",
	}
	merge(conf, defaults.Operator)
	merge(conf, defaults.Base)
	merge(conf, defaults.Namespace[dep.Namespace])
	version := dep.Spec.FlinkVersion
	for _, vd := range defaults.Version {
		if vd.Version == version || (vd.AndNewer && atLeastVersion(version, vd.Version)) {
			merge(conf, vd.Config)
		}
	}
	user, err := dep.Spec.FlinkConfiguration.Flatten()
	if err != nil {
		return nil, fmt.Errorf("spec.%w", err)
	}
	merge(conf, user)
	return conf, nil
}

// WithOptions is the effective configuration plus the operator options of the user's
// configuration: what a reconciler reads (REST port and the like, and its own options).
func WithOptions(effective, user Config) Config {
	out := Config{}
	for k, v := range effective {
		out[k] = v
	}
	for k, v := range user {
		if isOperatorOnlyKey(k) {
			out[k] = v
		}
	}
	return out
}

// EffectiveConfig computes the configuration Flink gets for a deployment: UserConfig without
// the operator's own keys, then the keys the operator derives from the spec, which win.
func EffectiveConfig(dep *flinkv1beta1.FlinkDeployment, defaults Defaults, opts BuildOptions) (Config, error) {
	conf, err := UserConfig(dep, defaults)
	if err != nil {
		return nil, err
	}
	for k := range conf {
		if isOperatorOnlyKey(k) {
			delete(conf, k)
		}
	}
	if err := deriveFromSpec(conf, dep, opts); err != nil {
		return nil, err
	}
	return conf, nil
}

// deriveFromSpec sets the keys the operator derives from the spec, over the user's: the
// cluster's identity and addresses, its components' resources, and for an application
// cluster its job.
func deriveFromSpec(conf Config, dep *flinkv1beta1.FlinkDeployment, opts BuildOptions) error {
	spec := &dep.Spec
	deriveCluster(conf, spec, dep.Name, dep.Namespace)
	if err := deriveComponents(conf, spec); err != nil {
		return err
	}
	if spec.Job == nil {
		if spec.Mode == flinkv1beta1.DeploymentModeStandalone {
			conf["execution.target"] = "remote"
		} else {
			conf["execution.target"] = "kubernetes-session"
		}
		return nil
	}
	return deriveJob(conf, spec, dep.Name, opts)
}

// deriveCluster sets the cluster's identity (id, namespace, image, service account), its
// ports and the addresses its processes listen on and reach each other by.
func deriveCluster(conf Config, spec *flinkv1beta1.FlinkDeploymentSpec, name, ns string) {
	conf["kubernetes.cluster-id"] = name
	conf["kubernetes.namespace"] = ns
	if spec.Image != "" {
		if spec.FlinkVersion != "" && !AtLeast(spec.FlinkVersion, 1, 17) {
			conf["kubernetes.container.image"] = spec.Image
		} else {
			conf["kubernetes.container.image.ref"] = spec.Image
		}
	}
	if spec.ImagePullPolicy != "" {
		conf["kubernetes.container.image.pull-policy"] = spec.ImagePullPolicy
	}
	if spec.ServiceAccount != "" {
		conf["kubernetes.service-account"] = spec.ServiceAccount
	}
	if conf.HAEnabled() {
		conf["high-availability.cluster-id"] = name
	}
	// Fixed ports: the Services and probes are built from them.
	setDefault(conf, "rest.port", strconv.Itoa(DefaultRESTPort))
	setDefault(conf, "jobmanager.rpc.port", strconv.Itoa(DefaultRPCPort))
	setDefault(conf, "blob.server.port", strconv.Itoa(DefaultBlobPort))
	setDefault(conf, "taskmanager.rpc.port", strconv.Itoa(DefaultTMRPCPort))
	if !conf.HAEnabled() {
		conf["jobmanager.rpc.address"] = InternalServiceName(name) + "." + ns
	}
	// The whole configuration file is replaced, so the image's listen-on-all-interfaces
	// settings must be restated.
	setDefault(conf, "jobmanager.bind-host", "0.0.0.0")
	setDefault(conf, "taskmanager.bind-host", "0.0.0.0")
	setDefault(conf, "rest.bind-address", "0.0.0.0")
	setDefault(conf, "rest.address", RESTServiceName(name)+"."+ns)
}

// deriveComponents sets the JobManager's and TaskManagers' resources and the JobManager's
// replicas; a native cluster's JobManager also gets the TaskManager pod template it creates
// pods from.
func deriveComponents(conf Config, spec *flinkv1beta1.FlinkDeploymentSpec) error {
	if jm := spec.JobManager; jm != nil {
		if err := deriveResources(conf, "jobmanager", "spec.jobManager", jm.Resources, jm.Resource); err != nil {
			return err
		}
		replicas := jm.Replicas
		if replicas == 0 {
			replicas = 1
		}
		conf["kubernetes.jobmanager.replicas"] = strconv.Itoa(int(replicas))
	}
	if tm := spec.TaskManager; tm != nil {
		if err := deriveResources(conf, "taskmanager", "spec.taskManager", tm.Resources, tm.Resource); err != nil {
			return err
		}
	}
	if spec.Mode != flinkv1beta1.DeploymentModeStandalone {
		conf["kubernetes.pod-template-file.taskmanager"] = PodTemplateDir + "/" + TaskManagerPodFile
	}
	return nil
}

// deriveJob sets what an application cluster runs: the job's code, entry point, arguments,
// parallelism, id and restore, and how the cluster ends with it.
func deriveJob(conf Config, spec *flinkv1beta1.FlinkDeploymentSpec, name string, opts BuildOptions) error {
	job := spec.Job
	standalone := spec.Mode == flinkv1beta1.DeploymentModeStandalone
	if standalone {
		conf["execution.target"] = "remote"
		if job.JarURI != "" {
			conf["pipeline.classpaths"] = strings.Replace(job.JarURI, "local://", "file://", 1)
		}
	} else {
		conf["execution.target"] = "kubernetes-application"
		if job.JarURI != "" {
			conf["pipeline.jars"] = job.JarURI
		}
	}
	parallelism, err := jobParallelism(conf, spec)
	if err != nil {
		return err
	}
	if parallelism > 0 {
		conf["parallelism.default"] = strconv.Itoa(parallelism)
	}
	conf["execution.shutdown-on-application-finish"] = "false"
	if conf.HAEnabled() {
		conf["execution.submit-failed-job-on-application-error"] = "true"
	}
	resultStores(conf, spec.FlinkVersion, name, opts.ResultStoreID)
	ApplyJobDefaults(conf, name, job)
	if job.EntryClass != "" {
		conf["$internal.application.main"] = job.EntryClass
	}
	if len(job.Args) > 0 {
		args, err := ProgramArgs(job.Args, spec.FlinkVersion, !standalone)
		if err != nil {
			return err
		}
		conf[ProgramArgsKey] = args
	}
	// A job id the user fixed wins over the operator's (upstream's setJobIdIfNecessary), and is
	// what the controller records (UserJobID).
	if user := UserJobID(spec); user != "" {
		conf[jobIDKey] = user
	} else if opts.JobID != "" {
		conf[jobIDKey] = opts.JobID
	}
	deriveRestore(conf, spec, opts)
	return nil
}

const jobIDKey = "$internal.pipeline.job-id"

// Flink's restore settings. 1.20 renamed them (execution.state-recovery.*) and every version
// since, 2.x included, still reads the old names, which are what upstream writes: a
// JobManager's log then shows the restore path under the name upstream's users and tools look
// for ("execution.savepoint.path, <path>").
const (
	savepointPathKey       = "execution.savepoint.path"
	stateRecoveryPathKey   = "execution.state-recovery.path"
	savepointIgnoreKey     = "execution.savepoint.ignore-unclaimed-state"
	stateRecoveryIgnoreKey = "execution.state-recovery.ignore-unclaimed-state"
)

// deriveRestore sets what an application job restores. That is the operator's decision
// (upgrade mode, recorded savepoint, HA): a restore path in the user's configuration would be
// restored by every redeploy, stateless ones included, so it never reaches Flink, as upstream
// removes it. Whether unclaimed state may be ignored stays the user's setting unless the spec
// (spec.job.allowNonRestoredState) or the operator decides, as upstream.
func deriveRestore(conf Config, spec *flinkv1beta1.FlinkDeploymentSpec, opts BuildOptions) {
	// Both names of each setting go before one is written: the newer name wins in Flink, so
	// a user's value under it would shadow the operator's.
	delete(conf, savepointPathKey)
	delete(conf, stateRecoveryPathKey)
	switch {
	case opts.RestorePath != "":
		conf[savepointPathKey] = opts.RestorePath
	case opts.LastStateRestore:
		conf[savepointPathKey] = flinkv1beta1.LastStateSentinelPath
	}
	allow, decided := opts.AllowNonRestoredState, opts.AllowNonRestoredState
	if spec.Job != nil && spec.Job.AllowNonRestoredState != nil {
		allow, decided = *spec.Job.AllowNonRestoredState, true
	}
	if decided {
		delete(conf, savepointIgnoreKey)
		delete(conf, stateRecoveryIgnoreKey)
		conf[savepointIgnoreKey] = strconv.FormatBool(allow)
	}
}

// UserJobID is the job id the user fixed in flinkConfiguration ($internal.pipeline.job-id), ""
// when none. It wins over BuildOptions.JobID, as upstream's (tools may rely on stable
// checkpoint paths <dir>/<job id>), so the controller records it as status.jobStatus.jobId
// before deploying an application cluster, instead of generating one.
func UserJobID(spec *flinkv1beta1.FlinkDeploymentSpec) string {
	flat, err := spec.FlinkConfiguration.Flatten()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(flat[jobIDKey])
}

// resultStores gives each deployment of an application cluster with HA storage result stores of
// its own, as upstream does (FLINK-27569). Flink records a job's (and on 2.3+ an application's)
// end in these stores. Kept after commit, an ended job is not run again when its JobManager
// restarts within the shutdown TTL; fresh for every deployment, a stale entry of an earlier
// deployment never makes the new cluster skip its job (upstream FLINK-40467 for the
// application store). The storage path is always the operator's, as upstream; a user-set
// delete-on-commit is kept.
func resultStores(conf Config, version flinkv1beta1.FlinkVersion, cluster, id string) {
	dir := HAStorageDir(conf)
	if dir == "" || id == "" {
		return
	}
	stores := []string{"job-result-store"}
	if version == "" || AtLeast(version, 2, 3) {
		// Flink 2.3 added the application result store; older versions have no such option.
		stores = append(stores, "application-result-store")
	}
	for _, store := range stores {
		setDefault(conf, store+".delete-on-commit", "false")
		conf[store+".storage-path"] = dir + "/" + store + "/" + cluster + "/" + id
	}
}

// HAStorageDir is the HA storage directory Flink uses, without a trailing slash; "" when none.
func HAStorageDir(conf Config) string {
	for _, key := range haStorageDirKeys {
		if dir := strings.TrimSuffix(strings.TrimSpace(conf[key]), "/"); dir != "" {
			return dir
		}
	}
	return ""
}

// haStorageDirKeys are high-availability.storageDir and the deprecated names Flink still reads
// for it, in Flink's order of precedence.
var haStorageDirKeys = []string{"high-availability.storageDir", "high-availability.zookeeper.storageDir", "recovery.zookeeper.storageDir"}

// jobParallelism, as upstream's FlinkConfigBuilder.getParallelism: TaskManager replicas × slots
// when spec.taskManager.replicas is set (job.parallelism is then ignored: the replicas fix the
// cluster's slots), else spec.job.parallelism, else unset.
func jobParallelism(conf Config, spec *flinkv1beta1.FlinkDeploymentSpec) (int, error) {
	if spec.TaskManager != nil && spec.TaskManager.Replicas != nil {
		slots, err := TaskSlots(conf)
		if err != nil {
			return 0, err
		}
		p := int(*spec.TaskManager.Replicas) * slots
		if p > math.MaxInt32 {
			return 0, fmt.Errorf("spec.taskManager.replicas %d x taskmanager.numberOfTaskSlots %d is a parallelism of %d, more than Flink's maximum (%d)",
				*spec.TaskManager.Replicas, slots, p, math.MaxInt32)
		}
		return p, nil
	}
	if spec.Job != nil && spec.Job.Parallelism > 0 {
		return int(spec.Job.Parallelism), nil
	}
	return 0, nil
}

// TaskSlots returns taskmanager.numberOfTaskSlots (default 1).
func TaskSlots(conf Config) (int, error) {
	slots, err := conf.Int("taskmanager.numberOfTaskSlots", 1)
	if err != nil {
		return 0, err
	}
	if slots < 1 {
		return 0, fmt.Errorf("flinkConfiguration taskmanager.numberOfTaskSlots: %d, must be at least 1", slots)
	}
	return slots, nil
}

// TaskManagerReplicas of a standalone cluster: spec.taskManager.replicas, else
// ceil(parallelism / slots), at least 1.
func TaskManagerReplicas(conf Config, spec *flinkv1beta1.FlinkDeploymentSpec) (int32, error) {
	if spec.TaskManager != nil && spec.TaskManager.Replicas != nil {
		return *spec.TaskManager.Replicas, nil
	}
	slots, err := TaskSlots(conf)
	if err != nil {
		return 0, err
	}
	parallelism, err := conf.Int("parallelism.default", 1)
	if err != nil {
		return 0, err
	}
	replicas := max(1, math.Ceil(float64(parallelism)/float64(slots)))
	if replicas > math.MaxInt32 {
		return 0, fmt.Errorf("flinkConfiguration parallelism.default: %d at %d slots each needs %.0f TaskManagers, more than a Deployment can have (%d)",
			parallelism, slots, replicas, math.MaxInt32)
	}
	return int32(replicas), nil
}

// deriveResources sets <component>.memory.process.size and kubernetes.<component>.cpu.amount
// (plus limit factors) from resources (requests, else limits) or the legacy resource field.
func deriveResources(conf Config, component, field string, res *corev1.ResourceRequirements, legacy *flinkv1beta1.Resource) error {
	if res != nil {
		if mem, ok := pick(res, corev1.ResourceMemory); ok {
			conf[component+".memory.process.size"] = FlinkMemory(MemoryValue(*mem.(*resource.Quantity)))
			if req, lim := res.Requests.Memory(), res.Limits.Memory(); !req.IsZero() && !lim.IsZero() {
				conf["kubernetes."+component+".memory.limit-factor"] = formatFactor(float64(MemoryValue(*lim)) / float64(MemoryValue(*req)))
			}
		}
		if cpu, ok := pick(res, corev1.ResourceCPU); ok {
			conf["kubernetes."+component+".cpu.amount"] = formatCPU(float64(cpu.MilliValue()) / 1000)
			if req, lim := res.Requests.Cpu(), res.Limits.Cpu(); !req.IsZero() && !lim.IsZero() {
				conf["kubernetes."+component+".cpu.limit-factor"] = formatFactor(float64(lim.MilliValue()) / float64(req.MilliValue()))
			}
		}
		return nil
	}
	if legacy == nil {
		return nil
	}
	if legacy.Memory != "" {
		b, err := MemoryBytes(legacy.Memory)
		if err != nil {
			return fmt.Errorf("%s.resource.memory: %w", field, err)
		}
		conf[component+".memory.process.size"] = FlinkMemory(b)
	}
	if legacy.CPU != nil {
		if *legacy.CPU <= 0 {
			return fmt.Errorf("%s.resource.cpu: %v, must be greater than 0", field, *legacy.CPU)
		}
		conf["kubernetes."+component+".cpu.amount"] = formatCPU(*legacy.CPU)
	}
	return nil
}

func pick(res *corev1.ResourceRequirements, name corev1.ResourceName) (q interface {
	Value() int64
	MilliValue() int64
}, ok bool) {
	if v, found := res.Requests[name]; found {
		return &v, true
	}
	if v, found := res.Limits[name]; found {
		return &v, true
	}
	return nil, false
}

func formatFactor(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func merge(dst Config, src map[string]string) {
	for k, v := range src {
		dst[k] = v
	}
}

// ApplyJobDefaults sets, where conf does not, what upstream sets for every job it runs, an
// application cluster's or a session job's (FlinkConfigBuilder.applyJobConfig): the job's name,
// checkpoints retained when the job is cancelled (a last-state upgrade that cancels restores
// the latest one, which Flink would otherwise delete with the job), and a checkpoint interval
// for last-state jobs.
func ApplyJobDefaults(conf Config, name string, job *flinkv1beta1.JobSpec) {
	setDefault(conf, "pipeline.name", name)
	setDefault(conf, "execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION")
	if job != nil && job.UpgradeMode == flinkv1beta1.UpgradeModeLastState {
		setDefault(conf, "execution.checkpointing.interval", "5min")
	}
}

func setDefault(conf Config, key, value string) {
	if _, ok := conf[key]; !ok {
		conf[key] = value
	}
}

// Duration reads a Flink duration ("30 s", "10min", "1h", "500ms", a bare number of
// milliseconds); def when the key is unset.
func (c Config) Duration(key string, def time.Duration) (time.Duration, error) {
	raw := strings.TrimSpace(c[key])
	if raw == "" {
		return def, nil
	}
	d, err := ParseFlinkDuration(raw)
	if err != nil {
		return 0, fmt.Errorf("flinkConfiguration %s: %w", key, err)
	}
	return d, nil
}

// ParseFlinkDuration parses Flink's duration syntax: a number and an optional unit.
func ParseFlinkDuration(s string) (time.Duration, error) { return options.ParseDuration(s) }
