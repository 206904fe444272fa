package validation

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/redact"
)

// Resolver resolves host names (net.Resolver satisfies it).
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// DefaultJarSchemes is upstream's default of user.artifacts.allowed-schemes.
var DefaultJarSchemes = []string{"https"}

// ValidateSessionJob checks a FlinkSessionJob; old is the stored object on update (nil on
// create); session is its session FlinkDeployment when it exists (nil otherwise: the job waits
// for it).
func (v *Validator) ValidateSessionJob(ctx context.Context, job, old *flinkv1beta1.FlinkSessionJob, session *flinkv1beta1.FlinkDeployment) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	errs = append(errs, validateName(field.NewPath("metadata", "name"), job.Name)...)
	if job.Spec.DeploymentName == "" {
		errs = append(errs, field.Required(spec.Child("deploymentName"), "the session FlinkDeployment (same namespace) to run on"))
	} else {
		errs = append(errs, validateName(spec.Child("deploymentName"), job.Spec.DeploymentName)...)
	}
	if old != nil && old.Spec.DeploymentName != job.Spec.DeploymentName {
		errs = append(errs, field.Forbidden(spec.Child("deploymentName"),
			fmt.Sprintf("cannot move a job from %q to %q; create a new FlinkSessionJob", old.Spec.DeploymentName, job.Spec.DeploymentName)))
	}
	if job.Spec.Job == nil {
		return append(errs, field.Required(spec.Child("job"), "the job to run"))
	}
	errs = append(errs, v.validateJarURI(ctx, spec.Child("job", "jarURI"), job.Spec.Job.JarURI)...)
	// A session job's configuration travels in a REST request, never in a configuration file.
	errs = append(errs, validateConfigKeys(spec.Child("flinkConfiguration"), job.Spec.FlinkConfiguration, "", false)...)
	if old != nil && old.Spec.Job != nil && changed(old.Spec.Job.SavepointRedeployNonce, job.Spec.Job.SavepointRedeployNonce) && job.Spec.Job.InitialSavepointPath == "" {
		errs = append(errs, field.Required(spec.Child("job", "initialSavepointPath"), "a savepoint redeploy (changed savepointRedeployNonce) restores from it"))
	}
	if session == nil {
		return errs
	}
	if session.Spec.Job != nil {
		errs = append(errs, field.Invalid(spec.Child("deploymentName"), job.Spec.DeploymentName,
			"names an application cluster (it has spec.job); session jobs need a FlinkDeployment without job"))
	}
	// The job's rules apply to the session's configuration with the job's own over it.
	merged := session.DeepCopy()
	sessionConf, err := session.Spec.FlinkConfiguration.Flatten()
	if err != nil {
		return errs
	}
	jobConf, err := job.Spec.FlinkConfiguration.Flatten()
	if err != nil {
		return append(errs, field.Invalid(spec.Child("flinkConfiguration"), "", err.Error()))
	}
	for k, val := range jobConf {
		sessionConf[k] = val
	}
	merged.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(sessionConf)
	conf, err := flinkconf.UserConfig(merged, v.Defaults)
	if err != nil {
		return errs
	}
	errs = append(errs, validateJob(spec.Child("job"), job.Spec.Job, conf)...)
	errs = append(errs, validateOperatorOptions(spec.Child("flinkConfiguration"), conf)...)
	return errs
}

// validateJarURI allows the configured schemes and, for http(s), refuses hosts on loopback,
// link-local, private or unspecified addresses: the operator downloads the jar, and must not be
// made to fetch from inside the cluster's network.
func (v *Validator) validateJarURI(ctx context.Context, path *field.Path, jarURI string) field.ErrorList {
	if jarURI == "" {
		return field.ErrorList{field.Required(path, "the job's jar")}
	}
	// The errors quote the URI without the password of its user info: they reach webhook
	// answers, status.error and events.
	shown := redact.URLUserInfo(jarURI)
	u, err := url.Parse(jarURI)
	if err != nil || u.Scheme == "" {
		return field.ErrorList{field.Invalid(path, shown, "a URI with a scheme, e.g. https://repo.example.com/job.jar")}
	}
	schemes := v.AllowedJarSchemes
	if len(schemes) == 0 {
		schemes = DefaultJarSchemes
	}
	if !contains(schemes, strings.ToLower(u.Scheme)) {
		return field.ErrorList{field.NotSupported(path, shown, schemeList(schemes))}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil
	}
	host := u.Hostname()
	var ips []net.IP
	// netip reads the literal as Go's dialer does: net.ParseIP refuses an IPv6 zone
	// ("fe80::1%eth0"), which then went to the resolver, found nothing, and was let through.
	if addr, err := netip.ParseAddr(host); err == nil {
		ips = []net.IP{net.IP(addr.WithZone("").AsSlice())}
	} else if v.Resolver != nil {
		lookupCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		addrs, err := v.Resolver.LookupIPAddr(lookupCtx, host)
		if err == nil {
			for _, a := range addrs {
				ips = append(ips, a.IP)
			}
		}
	}
	for _, ip := range ips {
		if v.allowedNetwork(ip) {
			continue
		}
		if ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsPrivate() || ip.IsUnspecified() || ip.IsMulticast() {
			return field.ErrorList{field.Invalid(path, shown, fmt.Sprintf("host %s is on a loopback, link-local, private or multicast address (%s); jars are fetched only from public hosts", host, ip))}
		}
	}
	return nil
}

// allowedNetwork reports whether ip is in one of the operator's AllowedNetworks.
func (v *Validator) allowedNetwork(ip net.IP) bool {
	addr, ok := netip.AddrFromSlice(ip)
	if !ok {
		return false
	}
	addr = addr.Unmap()
	for _, p := range v.AllowedNetworks {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

func schemeList(schemes []string) []string {
	out := make([]string, len(schemes))
	for i, s := range schemes {
		out[i] = s + "://..."
	}
	return out
}

// ValidateSnapshot checks a FlinkStateSnapshot; targetExists reports whether its jobReference
// names an existing resource (asked only when the snapshot still has to be triggered).
func (v *Validator) ValidateSnapshot(snap *flinkv1beta1.FlinkStateSnapshot, targetExists func(kind flinkv1beta1.JobKind, name string) (bool, error)) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	sp, cp := snap.Spec.Savepoint, snap.Spec.Checkpoint
	switch {
	case sp == nil && cp == nil:
		errs = append(errs, field.Required(spec, "exactly one of savepoint and checkpoint"))
	case sp != nil && cp != nil:
		errs = append(errs, field.Forbidden(spec.Child("checkpoint"), "exactly one of savepoint and checkpoint may be set"))
	}
	alreadyExists := sp != nil && sp.AlreadyExists != nil && *sp.AlreadyExists
	if alreadyExists {
		if sp.Path == "" {
			errs = append(errs, field.Required(spec.Child("savepoint", "path"), "the path of the existing savepoint (alreadyExists: true)"))
		}
		return errs
	}
	ref := snap.Spec.JobReference
	refPath := spec.Child("jobReference")
	if ref == nil || ref.Kind == "" || ref.Name == "" {
		if ref == nil || ref.Kind == "" {
			errs = append(errs, field.Required(refPath.Child("kind"), "FlinkDeployment or FlinkSessionJob"))
		}
		if ref == nil || ref.Name == "" {
			errs = append(errs, field.Required(refPath.Child("name"), "the resource (same namespace) whose job to snapshot"))
		}
		return errs
	}
	pending := snap.Status.State == "" || snap.Status.State == flinkv1beta1.SnapshotTriggerPending
	if pending && targetExists != nil {
		exists, err := targetExists(ref.Kind, ref.Name)
		if err != nil {
			return append(errs, field.InternalError(refPath, err))
		}
		if !exists {
			errs = append(errs, field.NotFound(refPath.Child("name"), fmt.Sprintf("%s %s", ref.Kind, ref.Name)))
		}
	}
	return errs
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortedResourceNames(list corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(list))
	for n := range list {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}
