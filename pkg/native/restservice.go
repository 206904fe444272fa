package native

import (
	"fmt"
	"maps"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// RESTServiceProblem says why the operator must not call a cluster's JobManager through svc,
// its REST Service, or returns "" when svc is as the operator renders it. The Service is in the
// tenant's namespace and editable with the ordinary edit role, so it, not the operator, would
// otherwise decide where the operator's REST calls go (savepoint disposal, job cancellation),
// with the operator's network reach and TLS client certificate:
//   - an ExternalName Service (or any externalName) is a DNS alias for any host, such as
//     another namespace's JobManager: refused. The types kubernetes.rest-service.exposed.type
//     renders (ClusterIP, Headless_ClusterIP, NodePort, LoadBalancer) all keep the in-cluster
//     address backed by the Service's selector, so they are accepted;
//   - the selector must be exactly the one rendered (the cluster's JobManager pods, native or
//     standalone): without one, the Service's endpoints are whatever addresses someone wrote
//     into EndpointSlices;
//   - the Service must be the cluster's: owned by its JobManager Deployment (as this operator
//     and Flink's native client create it) or by the FlinkDeployment, or left without owner by
//     this operator (an orphaning deletion).
func RESTServiceProblem(svc *corev1.Service, cluster string) string {
	if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.ExternalName != "" {
		return fmt.Sprintf("it is of type %s with externalName %q, an alias for another host; allowed: ClusterIP, NodePort, LoadBalancer (kubernetes.rest-service.exposed.type)",
			svc.Spec.Type, svc.Spec.ExternalName)
	}
	switch svc.Spec.Type {
	case "", corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
	default:
		return fmt.Sprintf("it is of type %s; allowed: ClusterIP, NodePort, LoadBalancer (kubernetes.rest-service.exposed.type)", svc.Spec.Type)
	}
	native := SelectorLabels(cluster, ComponentJobManager, TypeNative)
	standalone := SelectorLabels(cluster, ComponentJobManager, TypeStandalone)
	if !maps.Equal(svc.Spec.Selector, native) && !maps.Equal(svc.Spec.Selector, standalone) {
		return fmt.Sprintf("its selector is {%s}, not the cluster's JobManager pods {%s}", formatLabels(svc.Spec.Selector), formatLabels(native))
	}
	if why := (owners{cluster: cluster, dependent: true}).restServiceOwner(svc); why != "" {
		return why
	}
	return ""
}

// restServiceOwner is foreignReason for the REST Service when the UIDs are not at hand: a
// reference to the cluster's JobManager Deployment or FlinkDeployment by name.
func (o owners) restServiceOwner(svc *corev1.Service) string {
	refs := svc.GetOwnerReferences()
	for _, ref := range refs {
		switch {
		case ref.Kind == "Deployment" && ref.Name == JobManagerDeploymentName(o.cluster):
			return ""
		case ref.Kind == "FlinkDeployment" && ref.Name == o.cluster:
			return ""
		}
	}
	if len(refs) == 0 {
		if svc.GetLabels()[LabelApp] == o.cluster && managedByUs(svc) {
			return ""
		}
		return "it has no owner: the cluster's is owned by its JobManager Deployment"
	}
	return fmt.Sprintf("it is owned by %s %s, not by the cluster's JobManager Deployment", refs[0].Kind, refs[0].Name)
}

func formatLabels(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, ",")
}
