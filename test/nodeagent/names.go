package nodeagent

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// ipPool hands out pod addresses from a /16 routed to the loopback interface (127.1.0.0/16 by
// default: Linux routes all of 127.0.0.0/8 there; package podnet routes a private range in a
// network namespace), so every pod can bind its own fixed ports (6123, 8081, ...).
type ipPool struct {
	mu     sync.Mutex
	used   map[string]bool
	next   int
	prefix string
}

// defaultPodPrefix is the loopback range pods get when no other is given.
const defaultPodPrefix = "127.1."

func newIPPool(prefix string) *ipPool {
	if prefix == "" {
		prefix = defaultPodPrefix
	}
	return &ipPool{used: map[string]bool{}, next: 1, prefix: prefix}
}

func (p *ipPool) allocate() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		n := p.next
		p.next++
		if p.next > 65000 {
			p.next = 1
		}
		ip := fmt.Sprintf("%s%d.%d", p.prefix, n/250, n%250+2)
		if !p.used[ip] {
			p.used[ip] = true
			return ip
		}
	}
}

func (p *ipPool) release(ip string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.used, ip)
}

// podAddress is what name resolution needs to know of a running pod.
type podAddress struct {
	namespace string
	labels    map[string]string
	ip        string
	ready     bool
}

// serviceAddresses maps "service.namespace" to the addresses of the pods its selector picks:
// ready ones when there are any, else all running ones (a JobManager's RPC service must
// resolve before the JobManager reports ready, like a headless service publishing not-ready
// addresses). Pods are matched directly: EndpointSlices reject loopback addresses, so the
// cluster's own slices stay empty for pods of this node.
func serviceAddresses(services []*corev1.Service, pods []podAddress) map[string][]string {
	out := map[string][]string{}
	for _, svc := range services {
		if len(svc.Spec.Selector) == 0 {
			continue
		}
		sel := labels.SelectorFromSet(svc.Spec.Selector)
		var ready, running []string
		for _, p := range pods {
			if p.namespace != svc.Namespace || !sel.Matches(labels.Set(p.labels)) {
				continue
			}
			running = append(running, p.ip)
			if p.ready {
				ready = append(ready, p.ip)
			}
		}
		if len(ready) == 0 {
			ready = running
		}
		if len(ready) > 0 {
			sort.Strings(ready)
			out[svc.Name+"."+svc.Namespace] = ready
		}
	}
	return out
}

// hostsFile renders the names a pod in namespace ns resolves: localhost, its own name and the
// machine's host name are the pod's address (in a pod, localhost is the pod's own network
// namespace: Flink's application mode reaches its BlobServer through it), and every Service
// by its namespace-relative and full names.
func hostsFile(ns, podName, podIP, machine string, services map[string][]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s localhost %s %s\n", podIP, podName, machine)
	keys := make([]string, 0, len(services))
	for k := range services {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		svc, svcNS, _ := strings.Cut(key, ".")
		names := []string{key, key + ".svc", key + ".svc.cluster.local"}
		if svcNS == ns {
			names = append([]string{svc}, names...)
		}
		for _, ip := range services[key] {
			fmt.Fprintf(&b, "%s %s\n", ip, strings.Join(names, " "))
		}
	}
	return b.String()
}

// machineHostsFile renders the names a process outside any pod resolves: localhost and the
// machine's host name are the machine's (Java looks its own name up), and every Service by
// its "<svc>.<namespace>" forms (such a process has no namespace of its own).
func machineHostsFile(machine string, services map[string][]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "127.0.0.1 localhost %s\n", machine)
	keys := make([]string, 0, len(services))
	for k := range services {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		for _, ip := range services[key] {
			fmt.Fprintf(&b, "%s %s %s.svc %s.svc.cluster.local\n", ip, key, key, key)
		}
	}
	return b.String()
}

func writeFileIfChanged(path, content string) error {
	if old, err := os.ReadFile(path); err == nil && string(old) == content {
		return nil
	}
	return writeFileAtomic(path, []byte(content), 0o644)
}

// writeHostsFiles refreshes every running pod's hosts file (Java re-reads it on lookups; the
// pods' JVMs cache answers for one second).
func (a *Agent) writeHostsFiles() {
	a.mu.Lock()
	runners := make([]*podRunner, 0, len(a.pods))
	for _, r := range a.pods {
		runners = append(runners, r)
	}
	a.mu.Unlock()
	pods := make([]podAddress, 0, len(runners))
	for _, r := range runners {
		pods = append(pods, podAddress{namespace: r.pod.Namespace, labels: r.pod.Labels, ip: r.ip, ready: r.isReady()})
	}
	services := serviceAddresses(a.services(), pods)
	if a.opts.MachineHostsFile != "" {
		if err := writeFileIfChanged(a.opts.MachineHostsFile, machineHostsFile(a.hostname, services)); err != nil {
			a.logf("machine hosts file: %v", err)
		}
	}
	for _, r := range runners {
		content := hostsFile(r.pod.Namespace, r.pod.Name, r.ip, a.hostname, services)
		if err := r.writeHosts(content); err != nil {
			a.logf("pod %s/%s: hosts file: %v", r.pod.Namespace, r.pod.Name, err)
		}
	}
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
