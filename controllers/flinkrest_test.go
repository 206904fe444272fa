package controllers

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/native"
)

// restServiceOf is a cluster's REST Service as the operator renders it.
func restServiceOf(namespace, cluster string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: flinkconf.RESTServiceName(cluster), Namespace: namespace,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: native.JobManagerDeploymentName(cluster), UID: "jm-uid"}}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP,
			Selector: native.SelectorLabels(cluster, native.ComponentJobManager, native.TypeNative),
			Ports:    []corev1.ServicePort{{Name: "rest", Port: 8081}}},
	}
}
