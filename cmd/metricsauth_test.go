package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flink-operator/flink-operator/test/wait"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// TestSecureMetricsNeedAnAuthorizedToken: with --metrics-secure the
// metrics endpoint answers only callers the API server authenticates (TokenReview) and
// authorizes for get on /metrics (SubjectAccessReview), as config/rbac/metrics_reader_role.yaml
// grants it: no token 401, a ServiceAccount without the role 403, with it 200.
func TestSecureMetricsNeedAnAuthorizedToken(t *testing.T) {
	env := testEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.NewNamespace(t, "metrics-auth")

	o := options{metricsAddr: freeAddr(t), metricsSecure: true, probeAddr: freeAddr(t), watchNamespaces: ns,
		reconcileInterval: time.Minute, progressInterval: time.Second}
	mgr, err := newManager(env.Config, o)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() { cancel(); <-done }()

	// The metrics server's certificate is self-signed (no --metrics-cert-dir): not what is tested.
	httpc := &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // test
	scrape := func(token string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+o.metricsAddr+"/metrics", nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpc.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	wait.For(t, 30*time.Second, "the metrics endpoint never answered", func() bool { code, _ := scrape(""); return code != 0 })

	code, body := scrape("")
	assert.Equal(t, http.StatusUnauthorized, code, "no token: %s", body)

	kc, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	token := func(sa string) string {
		_, err := kc.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
		require.NoError(t, err)
		tr, err := kc.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
		require.NoError(t, err)
		return tr.Status.Token
	}

	code, body = scrape(token("stranger"))
	assert.Equal(t, http.StatusForbidden, code, "a ServiceAccount without get on /metrics: %s", body)

	// The ClusterRole the install ships for scrapers, under a name of this test's own.
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(root, "config", "rbac", "metrics_reader_role.yaml"))
	require.NoError(t, err)
	role := &rbacv1.ClusterRole{}
	require.NoError(t, yaml.UnmarshalStrict(raw, role))
	role.Name = ns + "-" + role.Name
	require.NoError(t, env.Client.Create(ctx, role))
	defer func() { _ = env.Client.Delete(context.Background(), role) }()
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "prometheus"}}}
	require.NoError(t, env.Client.Create(ctx, binding))
	defer func() { _ = env.Client.Delete(context.Background(), binding) }()

	prometheus := token("prometheus")
	wait.For(t, 10*time.Second, fmt.Sprintf("the metrics-reader ServiceAccount is refused: %d %s", code, body), func() bool { code, body = scrape(prometheus); return code == http.StatusOK })
	// The controllers' metrics appear once they have started, which may be after the first
	// answer.
	wait.For(t, 30*time.Second, "the metrics-reader never saw the controllers' metrics", func() bool {
		code, body = scrape(prometheus)
		return code == http.StatusOK && strings.Contains(body, "# TYPE controller_runtime_reconcile_total counter")
	})
}
