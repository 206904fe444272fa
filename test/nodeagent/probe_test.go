package nodeagent

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Probes ask as kubelet's prober: an https endpoint's certificate is not verified, and a
// redirect to another host (Flink's answer to a plain request on its TLS REST port) is the
// answer, not followed.
func TestKubeletProbeClient(t *testing.T) {
	tlsServer := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer tlsServer.Close()
	resp, err := kubeletProbeClient(time.Second).Get(tlsServer.URL + "/config")
	require.NoError(t, err, "a self-signed certificate is not verified")
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://basic-secure-rest.flink:8081/config", http.StatusTemporaryRedirect)
	}))
	defer redirecting.Close()
	resp, err = kubeletProbeClient(time.Second).Get(redirecting.URL + "/config")
	require.NoError(t, err, "a redirect to another host is not followed")
	resp.Body.Close()
	require.Equal(t, http.StatusTemporaryRedirect, resp.StatusCode)
}
