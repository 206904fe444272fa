package validation

import (
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// FuzzValidate feeds arbitrary JSON, seeded with the upstream resources, to every validator:
// whatever the API server lets through, validation must answer, never panic, and answer as
// checkErrors requires: each error names a field of the resource, validation leaves the
// resource as it found it, and the same resource gets the same answer every time.
// Run longer with: go test ./pkg/validation -run '^$' -fuzz FuzzValidate -fuzztime 60s
func FuzzValidate(f *testing.F) {
	deps, jobs, snaps := upstreamResources(f)
	for _, d := range deps {
		raw, _ := json.Marshal(d)
		f.Add(raw, raw)
	}
	for _, j := range jobs {
		raw, _ := json.Marshal(j)
		f.Add(raw, raw)
	}
	for _, s := range snaps {
		raw, _ := json.Marshal(s)
		f.Add(raw, []byte(`{}`))
	}
	f.Add([]byte(`{"spec":{"flinkConfiguration":{"a":{"b":[1,{"c":2}]}},"jobManager":{"resources":{"requests":{"memory":"0"}}}}}`), []byte(`{"status":{"reconciliationStatus":{"lastReconciledSpec":"{\"spec\":{\"job\":null}}"}}}`))

	v := &Validator{Resolver: fakeResolver{}}
	f.Fuzz(func(t *testing.T, newJSON, oldJSON []byte) {
		var dep, oldDep flinkv1beta1.FlinkDeployment
		if json.Unmarshal(newJSON, &dep) == nil {
			checkErrors(t, &dep, func() field.ErrorList { return v.ValidateDeployment(&dep, nil) })
			if json.Unmarshal(oldJSON, &oldDep) == nil {
				checkErrors(t, &dep, func() field.ErrorList { return v.ValidateDeployment(&dep, &oldDep) })
			}
		}
		var job, oldJob flinkv1beta1.FlinkSessionJob
		if json.Unmarshal(newJSON, &job) == nil {
			var session *flinkv1beta1.FlinkDeployment
			if json.Unmarshal(oldJSON, &oldDep) == nil {
				session = &oldDep
			}
			checkErrors(t, &job, func() field.ErrorList { return v.ValidateSessionJob(context.Background(), &job, nil, session) })
			if json.Unmarshal(oldJSON, &oldJob) == nil {
				checkErrors(t, &job, func() field.ErrorList { return v.ValidateSessionJob(context.Background(), &job, &oldJob, nil) })
			}
		}
		var snap flinkv1beta1.FlinkStateSnapshot
		if json.Unmarshal(newJSON, &snap) == nil {
			checkErrors(t, &snap, func() field.ErrorList {
				return v.ValidateSnapshot(&snap, func(flinkv1beta1.JobKind, string) (bool, error) { return false, nil })
			})
		}
	})
}

// checkErrors runs validate (of obj) twice and fails unless every error names a field under
// metadata, spec or status (what a user reads to find what to fix) with its type, validation
// left obj unchanged, and the second run answered as the first.
func checkErrors(t *testing.T, obj any, validate func() field.ErrorList) {
	t.Helper()
	before, err := json.Marshal(obj)
	if err != nil {
		return // not a resource the API server could have stored
	}
	first := validate()
	for _, e := range first {
		root := strings.SplitN(e.Field, ".", 2)[0]
		root = strings.SplitN(root, "[", 2)[0]
		if (root != "metadata" && root != "spec" && root != "status") || e.Type == "" {
			t.Fatalf("an error without a field of the resource or a type: %q (field %q, type %q)", e.Error(), e.Field, e.Type)
		}
	}
	after, err := json.Marshal(obj)
	if err != nil || string(after) != string(before) {
		t.Fatalf("validation changed the resource:\nbefore %s\nafter  %s", before, after)
	}
	if second := validate(); strings.Join(messages(second), "\n") != strings.Join(messages(first), "\n") {
		t.Fatalf("validated twice, answered differently:\n%q\n%q", messages(first), messages(second))
	}
}

// FuzzJarURI checks the jarURI rule on its own (FuzzValidate above reaches it only through a
// whole resource): never a panic, and a URI it accepts has an allowed scheme and, for http(s),
// a host the operator's downloader would not reach on a loopback, link-local, private,
// unspecified or multicast address: neither as a literal address (as Go's dialer reads it,
// IPv6 zones and IPv4-mapped forms included) nor as a name resolving to one (resolved is
// what the fake resolver answers for any name).
// Run longer with: go test ./pkg/validation -run '^$' -fuzz FuzzJarURI -fuzztime 60s
func FuzzJarURI(f *testing.F) {
	for _, seed := range [][2]string{
		{"https://repo.example.com/job.jar", "93.184.215.14"},
		{"https://repo.example.com/job.jar", "10.0.0.1"},
		{"http://127.0.0.1:8081/job.jar", ""},
		{"https://[::1]/job.jar", ""},
		{"https://[::ffff:169.254.169.254]/job.jar", ""},
		{"https://[fe80::1%25eth0]/job.jar", ""},
		{"HTTPS://LOCALHOST./job.jar", "127.0.0.1"},
		{"https://user:pass@[fd00::1]:443/job.jar", ""},
		{"s3://bucket/job.jar", ""},
		{"file:///var/run/secrets/kubernetes.io/serviceaccount/token", ""},
		{"https://0.0.0.0/job.jar", ""},
		{"https://224.0.0.1/job.jar", ""},
		{"local:///opt/flink/job.jar", ""},
	} {
		f.Add(seed[0], seed[1])
	}
	v := &Validator{AllowedJarSchemes: []string{"https", "http", "s3"}}
	f.Fuzz(func(t *testing.T, jarURI, resolved string) {
		v.Resolver = anyResolver(resolved)
		errs := v.validateJarURI(context.Background(), field.NewPath("spec", "job", "jarURI"), jarURI)
		if len(errs) > 0 {
			return
		}
		u, err := url.Parse(jarURI)
		if err != nil || !contains(v.AllowedJarSchemes, strings.ToLower(u.Scheme)) {
			t.Fatalf("accepted %q (scheme %q, parse error %v)", jarURI, u.Scheme, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return
		}
		for _, addr := range []string{u.Hostname(), resolved} {
			if a, err := netip.ParseAddr(addr); err == nil && !publicAddr(a.Unmap()) {
				t.Fatalf("accepted %q, which reaches %s", jarURI, a)
			}
		}
	})
}

// anyResolver answers every name with one address (none when it is not an address).
type anyResolver string

func (r anyResolver) LookupIPAddr(context.Context, string) ([]net.IPAddr, error) {
	if ip := net.ParseIP(string(r)); ip != nil {
		return []net.IPAddr{{IP: ip}}, nil
	}
	return nil, nil
}

func publicAddr(a netip.Addr) bool {
	return !a.IsLoopback() && !a.IsLinkLocalUnicast() && !a.IsLinkLocalMulticast() && !a.IsPrivate() &&
		!a.IsUnspecified() && !a.IsMulticast() && !a.IsInterfaceLocalMulticast()
}
