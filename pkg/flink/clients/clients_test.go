package clients

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/pkg/resttls"
	"github.com/flink-operator/flink-operator/test/pki"
)

// TestRESTURLScheme: the scheme of a cluster's REST URL follows its configuration, by
// Flink's rule for its version, in both address modes.
func TestRESTURLScheme(t *testing.T) {
	ca := pki.NewCA(t, "FlinkCA")
	trust := resttls.Settings{CAFile: pki.Write(t, filepath.Join(t.TempDir(), "ca.crt"), pki.CertPEM(ca.Cert))}
	jmLabels := native.SelectorLabels("basic", native.ComponentJobManager, native.TypeNative)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "jm", Namespace: "flink", Labels: jmLabels},
		Status: corev1.PodStatus{PodIP: "10.0.0.7", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	svc := restServiceOf("flink", "basic")
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(pod, svc).WithStatusSubresource(pod).Build()

	tests := []struct {
		name    string
		address string
		version flinkv1beta1.FlinkVersion
		conf    flinkconf.Config
		want    string
	}{
		{name: "plain", version: flinkv1beta1.FlinkVersion1_20, conf: flinkconf.Config{}, want: "http://basic-rest.flink:8081"},
		{name: "REST SSL", version: flinkv1beta1.FlinkVersion2_2, conf: flinkconf.Config{"security.ssl.rest.enabled": "true", "rest.port": "8443"},
			want: "https://basic-rest.flink:8443"},
		{name: "REST SSL off", version: flinkv1beta1.FlinkVersion1_20, conf: flinkconf.Config{"security.ssl.rest.enabled": "false", "security.ssl.enabled": "true"},
			want: "http://basic-rest.flink:8081"},
		// Upstream's basic-secure example: the deprecated switch, which Flink 1.x reads...
		{name: "security.ssl.enabled, Flink 1.20", version: flinkv1beta1.FlinkVersion1_20, conf: flinkconf.Config{"security.ssl.enabled": "true"},
			want: "https://basic-rest.flink:8081"},
		// ... and Flink 2 ignores (its REST endpoint stays plain http).
		{name: "security.ssl.enabled, Flink 2.2", version: flinkv1beta1.FlinkVersion2_2, conf: flinkconf.Config{"security.ssl.enabled": "true"},
			want: "http://basic-rest.flink:8081"},
		{name: "pod-ip mode", address: RESTAddressPodIP, version: flinkv1beta1.FlinkVersion2_3, conf: flinkconf.Config{"security.ssl.rest.enabled": "true"},
			want: "https://10.0.0.7:8081"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &Factory{Address: tt.address, Endpoints: reader, TLS: trust}
			c, err := f.For(context.Background(), "flink", "basic", tt.version, tt.conf)
			require.NoError(t, err)
			assert.Equal(t, tt.want, c.URL())
		})
	}

	t.Run("REST SSL without trust: an error naming the options", func(t *testing.T) {
		f := &Factory{}
		_, err := f.For(context.Background(), "flink", "basic", flinkv1beta1.FlinkVersion1_20, flinkconf.Config{"security.ssl.rest.enabled": "true"})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "REST TLS of flink/basic: security.ssl.rest.enabled is on but the operator trusts no CA")
		assert.Contains(t, err.Error(), resttls.FlagCAFile)
	})
	t.Run("bad boolean", func(t *testing.T) {
		_, err := (&Factory{}).For(context.Background(), "flink", "basic", flinkv1beta1.FlinkVersion1_20, flinkconf.Config{"security.ssl.rest.enabled": "on"})
		assert.ErrorContains(t, err, "security.ssl.rest.enabled")
	})
}

// TestRESTOverTLS: a JobManager whose certificate names its REST Service is reached over
// https through an http URL template, while another cluster's certificate is refused.
func TestRESTOverTLS(t *testing.T) {
	ca := pki.NewCA(t, "FlinkCA")
	trust := resttls.Settings{CAFile: pki.Write(t, filepath.Join(t.TempDir(), "ca.crt"), pki.CertPEM(ca.Cert))}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"flink-version":"2.2.0"}`))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, "jm", "*.flink.svc").TLS()}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	f := &Factory{URLTemplate: "http://127.0.0.1:{{port}}", TLS: trust}
	conf := flinkconf.Config{"security.ssl.rest.enabled": "true", "rest.port": u.Port()}

	c, err := f.For(context.Background(), "flink", "basic", flinkv1beta1.FlinkVersion2_2, conf)
	require.NoError(t, err)
	cfg, err := c.Config(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "2.2.0", cfg.FlinkVersion)

	other, err := f.For(context.Background(), "team-b", "basic", flinkv1beta1.FlinkVersion2_2, conf)
	require.NoError(t, err)
	_, err = other.Config(context.Background())
	assert.ErrorIs(t, err, resttls.ErrName)
}

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

// TestRESTServiceChecked: the cluster's REST Service is in the tenant's namespace; before a
// REST client is made it must be the one the operator renders. In pod-ip mode a selector the
// tenant pointed at other pods (here a "victim" pod of the same namespace) is refused rather
// than followed to that pod's address; in service mode an ExternalName is refused.
func TestRESTServiceChecked(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	victim := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "victim", Namespace: "flink", Labels: map[string]string{"app": "victim"}},
		Status: corev1.PodStatus{PodIP: "10.0.0.66", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	for name, tc := range map[string]struct {
		address string
		mutate  func(*corev1.Service)
		want    string
	}{
		"pod-ip: selector of other pods": {RESTAddressPodIP, func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "victim"} },
			"REST Service flink/basic-rest: its selector is {app=victim}"},
		"service: ExternalName": {RESTAddressService, func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ExternalName, s.Spec.Selector = corev1.ServiceTypeExternalName, "victim-rest.victim.svc.cluster.local", nil
		}, "type ExternalName"},
		"service: no selector": {RESTAddressService, func(s *corev1.Service) { s.Spec.Selector = nil }, "its selector is {}"},
		"service: someone else's": {RESTAddressService, func(s *corev1.Service) {
			s.OwnerReferences = []metav1.OwnerReference{{Kind: "Deployment", Name: "victim", UID: "x"}}
		}, "owned by Deployment victim"},
	} {
		t.Run(name, func(t *testing.T) {
			svc := restServiceOf("flink", "basic")
			tc.mutate(svc)
			reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(victim, svc).WithStatusSubresource(victim).Build()
			c, err := (&Factory{Address: tc.address, Endpoints: reader}).For(context.Background(), "flink", "basic", flinkv1beta1.FlinkVersion1_20, flinkconf.Config{})
			if c != nil {
				t.Errorf("a client of %s was made", c.URL())
			}
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
			_, typed := IsRESTServiceRefused(err)
			assert.True(t, typed, "typed error: %v", err)
		})
	}
}
