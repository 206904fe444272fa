// Package validation holds the rules a FlinkDeployment, FlinkSessionJob or FlinkStateSnapshot
// must follow (upstream's validator, plus quantity and reference checks). The admission
// webhook and the reconcilers run the same rules, so an operator installed without the webhook
// still refuses what cannot work. Every rule reports a field path and what is allowed, and all
// violations of a resource are reported together.
package validation

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/pkg/options"
	"github.com/flink-operator/flink-operator/pkg/schedule"
)

// Validator checks resources against the operator's configuration.
type Validator struct {
	// Defaults are the operator's default Flink configuration (the rules read the effective one).
	Defaults flinkconf.Defaults
	// AllowedJarSchemes are the jarURI schemes a session job may use; upstream's
	// user.artifacts.allowed-schemes, https by default.
	AllowedJarSchemes []string
	// Resolver looks up jar hosts, to refuse jars served from loopback, link-local and private
	// addresses (the operator fetches them: server-side request forgery). nil skips lookups of
	// names; literal IP addresses are always checked.
	Resolver Resolver
	// AllowedNetworks are ranges jar hosts may be in although they are not public, as the
	// operator's fetcher allows them (--artifact-allowed-networks, the counterpart of upstream's
	// user.artifacts.disallow-restricted-hosts: false): an in-cluster artifact repository.
	// Without them such jars would pass the fetcher and still be refused here.
	AllowedNetworks []netip.Prefix
	// OperatorConfig returns the operator options of the operator configuration in force now
	// (flinkconf.Defaults.Operator of the live configuration), from which the operator-wide Policy
	// is read at every validation, so a changed operator ConfigMap applies at once. nil reads
	// Defaults.Operator.
	OperatorConfig func() map[string]string
}

// nameFormat is upstream's limit: the name becomes part of Service and ConfigMap names.
var nameFormat = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,43}[a-z0-9])?$`)

const nameRule = "lowercase letters, digits and '-', starting with a letter, ending with a letter or digit, at most 45 characters"

// supportedVersions are v1_15 and newer; v1_13 and v1_14 are in the schema only for upstream
// compatibility.
var supportedVersions = func() []string {
	all := []flinkv1beta1.FlinkVersion{
		flinkv1beta1.FlinkVersion1_15, flinkv1beta1.FlinkVersion1_16, flinkv1beta1.FlinkVersion1_17,
		flinkv1beta1.FlinkVersion1_18, flinkv1beta1.FlinkVersion1_19, flinkv1beta1.FlinkVersion1_20,
		flinkv1beta1.FlinkVersion2_0, flinkv1beta1.FlinkVersion2_1, flinkv1beta1.FlinkVersion2_2,
		flinkv1beta1.FlinkVersion2_3, flinkv1beta1.FlinkVersion2_4,
	}
	out := make([]string, len(all))
	for i, v := range all {
		out[i] = string(v)
	}
	return out
}()

// Configuration keys the operator owns; a user setting them would break the cluster's identity.
var forbiddenKeys = []string{"kubernetes.namespace", "kubernetes.cluster-id", "high-availability.cluster-id"}

var allowedLogFiles = []string{native.Log4jConsoleFile, native.LogbackConsoleFile}

// LabelCanary marks upstream's canary resources, used only to health-check the operator; they
// are not validated (upstream skips them too).
const LabelCanary = "flink.apache.org/canary"

// IsCanary reports whether a resource is a canary.
func IsCanary(labels map[string]string) bool { return labels[LabelCanary] == "true" }

// ValidateDeployment checks a FlinkDeployment; old is the stored object on update (nil on create).
func (v *Validator) ValidateDeployment(dep, old *flinkv1beta1.FlinkDeployment) field.ErrorList {
	if IsCanary(dep.Labels) {
		return nil
	}
	var errs field.ErrorList
	spec := field.NewPath("spec")
	errs = append(errs, validateName(field.NewPath("metadata", "name"), dep.Name)...)

	switch {
	case dep.Spec.FlinkVersion == "":
		errs = append(errs, field.Required(spec.Child("flinkVersion"), "one of "+strings.Join(supportedVersions, ", ")))
	case !contains(supportedVersions, string(dep.Spec.FlinkVersion)):
		errs = append(errs, field.NotSupported(spec.Child("flinkVersion"), dep.Spec.FlinkVersion, supportedVersions))
	}
	if dep.Spec.ServiceAccount == "" {
		errs = append(errs, field.Required(spec.Child("serviceAccount"), "the service account of the Flink pods"))
	}

	conf, err := flinkconf.UserConfig(dep, v.Defaults)
	if err != nil {
		return append(errs, field.Invalid(spec.Child("flinkConfiguration"), "", err.Error()))
	}
	errs = append(errs, validateConfigKeys(spec.Child("flinkConfiguration"), dep.Spec.FlinkConfiguration, dep.Spec.FlinkVersion, true)...)
	errs = append(errs, validateOperatorOptions(spec.Child("flinkConfiguration"), conf)...)
	if options.RollbackEnabled.Get(conf) && !conf.HAEnabled() {
		// A cluster rolls back through its HA metadata (upstream's rule). A session job does not
		// need it: its state is in its checkpoints and savepoints, kept on the session.
		errs = append(errs, field.Invalid(spec.Child("flinkConfiguration").Key(options.RollbackEnabled.Key), conf[options.RollbackEnabled.Key],
			"rollback needs high availability (high-availability.type: kubernetes)"))
	}
	errs = append(errs, validateSizes(spec, conf, dep)...)

	if dep.Spec.Ingress != nil {
		if _, err := native.BuildIngress(dep, flinkconf.DefaultRESTPort); err != nil {
			errs = append(errs, field.Invalid(spec.Child("ingress", "template"), dep.Spec.Ingress.Template, strings.TrimPrefix(err.Error(), "spec.ingress.template: ")))
		}
	}
	for _, k := range sortedKeys(dep.Spec.LogConfiguration) {
		if !contains(allowedLogFiles, k) {
			errs = append(errs, field.NotSupported(spec.Child("logConfiguration").Key(k), k, allowedLogFiles))
		}
	}

	jmPath, tmPath := spec.Child("jobManager"), spec.Child("taskManager")
	var jmRes, tmRes *corev1.ResourceRequirements
	var jmLegacy, tmLegacy *flinkv1beta1.Resource
	if jm := dep.Spec.JobManager; jm != nil {
		jmRes, jmLegacy = jm.Resources, jm.Resource
		if jm.Replicas < 0 {
			errs = append(errs, field.Invalid(jmPath.Child("replicas"), jm.Replicas, "must be at least 1"))
		}
		if jm.Replicas > 1 && !conf.HAEnabled() {
			errs = append(errs, field.Invalid(jmPath.Child("replicas"), jm.Replicas, "more than one JobManager needs high availability (high-availability.type: kubernetes)"))
		}
	}
	if tm := dep.Spec.TaskManager; tm != nil {
		tmRes, tmLegacy = tm.Resources, tm.Resource
		if tm.Replicas != nil && *tm.Replicas < 1 {
			errs = append(errs, field.Invalid(tmPath.Child("replicas"), *tm.Replicas, "must be at least 1"))
		}
	}
	errs = append(errs, validateMemory(jmPath, "jobmanager", jmRes, jmLegacy, conf)...)
	errs = append(errs, validateMemory(tmPath, "taskmanager", tmRes, tmLegacy, conf)...)
	errs = append(errs, validateResources(jmPath, jmRes, jmLegacy)...)
	errs = append(errs, validateResources(tmPath, tmRes, tmLegacy)...)

	if job := dep.Spec.Job; job != nil {
		errs = append(errs, validateJob(spec.Child("job"), job, conf)...)
		if (dep.Spec.TaskManager == nil || dep.Spec.TaskManager.Replicas == nil) && job.Parallelism < 1 {
			errs = append(errs, field.Invalid(spec.Child("job", "parallelism"), job.Parallelism,
				"must be at least 1 unless spec.taskManager.replicas is set"))
		}
	}
	errs = append(errs, v.validatePolicy(dep)...)
	if old != nil {
		errs = append(errs, v.validateDeploymentUpdate(dep, old)...)
	}
	return errs
}

// validateDeploymentUpdate compares the new spec with the one last deployed (status), as
// upstream does: what is running is what must not be switched under it.
func (v *Validator) validateDeploymentUpdate(dep, old *flinkv1beta1.FlinkDeployment) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	var deployed flinkv1beta1.FlinkDeploymentSpec
	found, _, err := flinkv1beta1.DecodeReconciledSpec(old.Status.ReconciliationStatus.LastReconciledSpec, &deployed)
	if err != nil {
		return append(errs, field.InternalError(field.NewPath("status", "reconciliationStatus", "lastReconciledSpec"), err))
	}
	if !found {
		return nil
	}
	if (deployed.Job == nil) != (dep.Spec.Job == nil) {
		from, to := "a session cluster", "an application cluster"
		if deployed.Job != nil {
			from, to = to, from
		}
		errs = append(errs, field.Forbidden(spec.Child("job"), fmt.Sprintf("cannot turn %s into %s; create a new FlinkDeployment", from, to)))
	}
	if modeOf(deployed.Mode) != modeOf(dep.Spec.Mode) {
		errs = append(errs, field.Forbidden(spec.Child("mode"), fmt.Sprintf("cannot change from %s to %s after the first deployment", modeOf(deployed.Mode), modeOf(dep.Spec.Mode))))
	}
	if deployed.Job != nil && dep.Spec.Job != nil {
		if deployed.Job.State == flinkv1beta1.JobStateSuspended && deployed.Job.UpgradeMode == flinkv1beta1.UpgradeModeLastState &&
			deployed.FlinkVersion != dep.Spec.FlinkVersion {
			errs = append(errs, field.Forbidden(spec.Child("flinkVersion"),
				fmt.Sprintf("cannot change from %s to %s while suspended with last-state: the job's state is in HA metadata of the old version; resume first, or upgrade with upgradeMode savepoint", deployed.FlinkVersion, dep.Spec.FlinkVersion)))
		}
		if changed(deployed.Job.SavepointRedeployNonce, dep.Spec.Job.SavepointRedeployNonce) && dep.Spec.Job.InitialSavepointPath == "" {
			errs = append(errs, field.Required(spec.Child("job", "initialSavepointPath"), "a savepoint redeploy (changed savepointRedeployNonce) restores from it"))
		}
	}
	return errs
}

func modeOf(m flinkv1beta1.KubernetesDeploymentMode) flinkv1beta1.KubernetesDeploymentMode {
	if m == "" {
		return flinkv1beta1.DeploymentModeNative
	}
	return m
}

func changed(before, after *int64) bool {
	return after != nil && (before == nil || *before != *after)
}

func validateName(path *field.Path, name string) field.ErrorList {
	if !nameFormat.MatchString(name) {
		return field.ErrorList{field.Invalid(path, name, nameRule)}
	}
	return nil
}

// validateConfigKeys refuses the keys the operator owns, also when padded: Flink's legacy
// parser trims keys, so "kubernetes.cluster-id " is kubernetes.cluster-id. When the
// configuration is written to a file (fileBound: deployments, not session jobs), it also
// refuses entries the file of that Flink version cannot hold as given (flinkconf.CheckConfigEntry:
// in flink-conf.yaml, up to 1.18, entries that would set another key). The value is not
// echoed: it may be a secret, and admission denials end up in audit logs.
func validateConfigKeys(path *field.Path, cfg flinkv1beta1.FlinkConfiguration, version flinkv1beta1.FlinkVersion, fileBound bool) field.ErrorList {
	var errs field.ErrorList
	user, err := cfg.Flatten()
	if err != nil {
		return nil // reported by UserConfig
	}
	keys := sortedKeys(user)
	owned := map[string]bool{}
	for _, fk := range forbiddenKeys {
		for _, k := range keys {
			if flinkconf.TrimKey(k) == fk {
				owned[k] = true
				errs = append(errs, field.Forbidden(path.Key(k), "set by the operator from the resource's name and namespace"))
			}
		}
	}
	if !fileBound {
		return errs
	}
	for _, k := range keys {
		if err := flinkconf.CheckConfigEntry(version, k, user[k]); err != nil && !owned[k] {
			errs = append(errs, field.Invalid(path.Key(k), field.OmitValueType{}, err.Error()))
		}
	}
	return errs
}

// Operator and autoscaler options with their rules.
const (
	checkpointDirKey       = "execution.checkpointing.dir"
	legacyCheckpointDirKey = "state.checkpoints.dir"
	savepointDirKey        = "execution.checkpointing.savepoint-dir"
	legacySavepointDirKey  = "state.savepoints.dir"
)

// autoscalerRanges are the autoscaler options with bounded values.
var autoscalerRanges = []struct {
	key      string
	min, max float64
}{
	{options.AutoscalerPrefix + "target.utilization", 0, 1},
	{options.AutoscalerPrefix + "target.utilization.boundary", 0, 1},
	{options.AutoscalerPrefix + "scale-down.max-factor", 0, 1},
	{options.AutoscalerPrefix + "scale-up.max-factor", 0, 1e9},
	{options.AutoscalerPrefix + "memory.gc-pressure.threshold", 0, 1},
	{options.AutoscalerPrefix + "memory.heap-usage.threshold", 0, 1},
}

func validateOperatorOptions(path *field.Path, conf flinkconf.Config) field.ErrorList {
	var errs field.ErrorList
	// Every registered option holds a value of its type, parsed as the controllers parse it.
	for _, o := range options.All() {
		if contains(policyKeys, o.Key) {
			continue // operator configuration only: checked with the policy
		}
		if err := o.Check(conf); err != nil {
			errs = append(errs, field.Invalid(path.Key(o.Key), conf[o.Key], fmt.Sprintf("must be a %s: %v", o.Type, err)))
		}
	}
	if options.HealthCheck.Get(conf) && !options.JMDeploymentRecovery.Get(conf) {
		errs = append(errs, field.Invalid(path.Key(options.HealthCheck.Key), conf[options.HealthCheck.Key], options.JMDeploymentRecovery.Key+" must be enabled for health checks"))
	}
	for _, key := range []string{options.PeriodicSavepoint.Key, options.PeriodicCheckpoint.Key} {
		raw := strings.TrimSpace(conf[key])
		if raw == "" {
			continue
		}
		if _, err := flinkconf.ParseFlinkDuration(raw); err == nil {
			continue
		}
		if _, err := schedule.ParseCron(raw); err != nil {
			errs = append(errs, field.Invalid(path.Key(key), raw, "a duration (e.g. 1 h) or a Quartz cron expression (e.g. 0 0 * * * ?): "+err.Error()))
		}
	}
	for _, r := range autoscalerRanges {
		raw, set := conf[r.key]
		if !set {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
		if err != nil || f < r.min || f > r.max {
			errs = append(errs, field.Invalid(path.Key(r.key), raw, fmt.Sprintf("must be a number from %g to %g", r.min, r.max)))
		}
	}
	return errs
}

// validateSizes refuses numbers the cluster's objects cannot hold: ports outside 1 to 65535
// (cast into a container port they would wrap around), and a parallelism needing more
// TaskManagers than a Deployment can have.
func validateSizes(spec *field.Path, conf flinkconf.Config, dep *flinkv1beta1.FlinkDeployment) field.ErrorList {
	var errs field.ErrorList
	confPath := spec.Child("flinkConfiguration")
	for _, p := range flinkconf.PortKeys {
		if _, err := conf.Port(p.Key, p.Default); err != nil {
			errs = append(errs, field.Invalid(confPath.Key(p.Key), conf[p.Key], "a port number from 1 to 65535"))
		}
	}
	if dep.Spec.Mode == flinkv1beta1.DeploymentModeStandalone {
		if _, err := flinkconf.TaskManagerReplicas(conf, &dep.Spec); err != nil {
			errs = append(errs, field.Invalid(confPath.Key("parallelism.default"), conf["parallelism.default"], err.Error()))
		}
	}
	return errs
}

// validateJob applies the job rules over the effective configuration.
func validateJob(path *field.Path, job *flinkv1beta1.JobSpec, conf flinkconf.Config) field.ErrorList {
	var errs field.ErrorList
	confPath := field.NewPath("spec", "flinkConfiguration")
	hasCheckpointDir := conf[checkpointDirKey] != "" || conf[legacyCheckpointDirKey] != ""
	hasSavepointDir := conf[savepointDirKey] != "" || conf[legacySavepointDirKey] != ""
	mode := job.UpgradeMode
	if mode != "" && mode != flinkv1beta1.UpgradeModeStateless && !hasCheckpointDir {
		errs = append(errs, field.Required(confPath.Key(checkpointDirKey),
			fmt.Sprintf("upgradeMode %s needs a checkpoint directory (%s or %s)", mode, checkpointDirKey, legacyCheckpointDirKey)))
	}
	needSavepointDir := func(why string) {
		errs = append(errs, field.Required(confPath.Key(savepointDirKey),
			fmt.Sprintf("%s needs a savepoint directory (%s or %s)", why, savepointDirKey, legacySavepointDirKey)))
	}
	switch {
	case hasSavepointDir:
	case mode == flinkv1beta1.UpgradeModeSavepoint:
		needSavepointDir("upgradeMode savepoint")
	case job.SavepointTriggerNonce != nil:
		needSavepointDir("spec.job.savepointTriggerNonce")
	case options.PeriodicSavepoint.Get(conf) != "" && options.PeriodicSavepoint.Get(conf) != "0":
		needSavepointDir(options.PeriodicSavepoint.Key)
	case options.MaxCheckpointAge.IsSet(conf):
		needSavepointDir(options.MaxCheckpointAge.Key)
	}
	if job.Parallelism < 0 {
		errs = append(errs, field.Invalid(path.Child("parallelism"), job.Parallelism, "must not be negative"))
	}
	return errs
}

// validateMemory requires the component's memory to be given somewhere.
func validateMemory(path *field.Path, component string, res *corev1.ResourceRequirements, legacy *flinkv1beta1.Resource, conf flinkconf.Config) field.ErrorList {
	if res != nil {
		if _, ok := res.Requests[corev1.ResourceMemory]; ok {
			return nil
		}
		if _, ok := res.Limits[corev1.ResourceMemory]; ok {
			return nil
		}
	}
	if legacy != nil && legacy.Memory != "" {
		return nil
	}
	for _, k := range []string{component + ".memory.process.size", component + ".memory.flink.size"} {
		if conf[k] != "" {
			return nil
		}
	}
	if component == "jobmanager" && conf["jobmanager.memory.heap.size"] != "" {
		return nil
	}
	if component == "taskmanager" && conf["taskmanager.memory.task.heap.size"] != "" && conf["taskmanager.memory.managed.size"] != "" {
		return nil
	}
	return field.ErrorList{field.Required(path.Child("resource", "memory"),
		fmt.Sprintf("the %s's memory: set %s, %s, or %s.memory.process.size in spec.flinkConfiguration",
			component, path.Child("resource", "memory"), path.Child("resources"), component))}
}

// validateResources checks that quantities parse and make sense.
func validateResources(path *field.Path, res *corev1.ResourceRequirements, legacy *flinkv1beta1.Resource) field.ErrorList {
	var errs field.ErrorList
	if legacy != nil {
		p := path.Child("resource")
		if legacy.CPU != nil && *legacy.CPU <= 0 {
			errs = append(errs, field.Invalid(p.Child("cpu"), *legacy.CPU, "must be greater than 0"))
		}
		if legacy.Memory != "" {
			if b, err := flinkconf.MemoryBytes(legacy.Memory); err != nil {
				errs = append(errs, field.Invalid(p.Child("memory"), legacy.Memory, "a Flink memory size (2048m, 1g) or a Kubernetes quantity (2Gi)"))
			} else if b <= 0 {
				errs = append(errs, field.Invalid(p.Child("memory"), legacy.Memory, "must be greater than 0"))
			}
		}
		if legacy.EphemeralStorage != "" {
			if q, err := resource.ParseQuantity(legacy.EphemeralStorage); err != nil {
				errs = append(errs, field.Invalid(p.Child("ephemeralStorage"), legacy.EphemeralStorage, "a Kubernetes quantity, e.g. 10Gi"))
			} else if q.Sign() < 0 {
				errs = append(errs, field.Invalid(p.Child("ephemeralStorage"), legacy.EphemeralStorage, "must not be negative"))
			}
		}
	}
	if res == nil {
		return errs
	}
	p := path.Child("resources")
	for _, kind := range []struct {
		name string
		list corev1.ResourceList
	}{{"requests", res.Requests}, {"limits", res.Limits}} {
		for _, name := range sortedResourceNames(kind.list) {
			q := kind.list[name]
			positive := name == corev1.ResourceCPU || name == corev1.ResourceMemory
			if positive && q.Sign() <= 0 {
				errs = append(errs, field.Invalid(p.Child(kind.name).Key(string(name)), q.String(), "must be greater than 0"))
			} else if q.Sign() < 0 {
				errs = append(errs, field.Invalid(p.Child(kind.name).Key(string(name)), q.String(), "must not be negative"))
			}
		}
	}
	for _, name := range sortedResourceNames(res.Requests) {
		req := res.Requests[name]
		if lim, ok := res.Limits[name]; ok && req.Cmp(lim) > 0 {
			errs = append(errs, field.Invalid(p.Child("requests").Key(string(name)), req.String(), fmt.Sprintf("must not exceed the limit %s", lim.String())))
		}
	}
	return errs
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
