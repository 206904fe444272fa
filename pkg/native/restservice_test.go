package native

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRESTServiceProblem(t *testing.T) {
	owned := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "orders", UID: "jm"}}
	svc := func(mutate func(*corev1.Service)) *corev1.Service {
		s := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "orders-rest", Namespace: "tenant", OwnerReferences: owned},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP,
				Selector: map[string]string{LabelApp: "orders", LabelComponent: ComponentJobManager, LabelType: TypeNative}},
		}
		if mutate != nil {
			mutate(s)
		}
		return s
	}
	for name, tc := range map[string]struct {
		svc  *corev1.Service
		want string // "" accepted, else a part of the problem
	}{
		"as rendered":         {svc(nil), ""},
		"headless":            {svc(func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone }), ""},
		"NodePort":            {svc(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }), ""},
		"LoadBalancer":        {svc(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer }), ""},
		"standalone selector": {svc(func(s *corev1.Service) { s.Spec.Selector[LabelType] = TypeStandalone }), ""},
		"owned by the FlinkDeployment": {svc(func(s *corev1.Service) {
			s.OwnerReferences = []metav1.OwnerReference{{Kind: "FlinkDeployment", Name: "orders"}}
		}), ""},
		"ExternalName": {svc(func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ExternalName, s.Spec.Selector = corev1.ServiceTypeExternalName, "victim-rest.victim.svc.cluster.local", nil
		}), `type ExternalName with externalName "victim-rest.victim.svc.cluster.local"`},
		"externalName on a ClusterIP": {svc(func(s *corev1.Service) { s.Spec.ExternalName = "victim" }), `externalName "victim"`},
		"no selector": {svc(func(s *corev1.Service) { s.Spec.Selector = nil }),
			"its selector is {}, not the cluster's JobManager pods {app=orders,component=jobmanager,type=flink-native-kubernetes}"},
		"other pods":         {svc(func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "victim"} }), "its selector is {app=victim}"},
		"wider selector":     {svc(func(s *corev1.Service) { delete(s.Spec.Selector, LabelComponent) }), "its selector is"},
		"extra selector key": {svc(func(s *corev1.Service) { s.Spec.Selector["x"] = "y" }), "its selector is"},
		"another owner": {svc(func(s *corev1.Service) {
			s.OwnerReferences = []metav1.OwnerReference{{Kind: "Deployment", Name: "other"}}
		}), "owned by Deployment other"},
		"no owner, not the operator's": {svc(func(s *corev1.Service) { s.OwnerReferences = nil }), "no owner"},
	} {
		t.Run(name, func(t *testing.T) {
			got := RESTServiceProblem(tc.svc, "orders")
			if tc.want == "" {
				assert.Empty(t, got)
			} else {
				assert.Contains(t, got, tc.want)
			}
		})
	}
}
