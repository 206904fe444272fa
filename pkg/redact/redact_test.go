package redact

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

func TestIsSecretKey(t *testing.T) {
	for key, secret := range map[string]bool{
		"security.ssl.keystore-password":            true,
		"s3.secret-key":                             true,
		"fs.azure.account.key.acct.blob.core":       true,
		"kubernetes.operator.metrics.auth.token":    true,
		"security.kerberos.login.keytab":            true,
		"taskmanager.numberOfTaskSlots":             false,
		"high-availability.storageDir":              false,
		"kubernetes.operator.savepoint.format.type": false,
	} {
		assert.Equal(t, secret, IsSecretKey(key, nil), key)
	}
	assert.True(t, IsSecretKey("my.custom.vault", []string{"vault"}), "patterns are configurable")
}

func TestRedactor(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Env: []corev1.EnvVar{{Name: "DB_URL", Value: "jdbc:postgresql://db/orders?password=pw-in-env"}}}}}}
	values := Values(map[string]string{"s3.secret-key": "hunter2-XYZ", "parallelism.default": "4"}, nil, pod)
	r := New(values...)

	assert.Equal(t, "bad value ******: must be a number", r.String("bad value hunter2-XYZ: must be a number"))
	assert.Equal(t, "url ******", r.String("url jdbc:postgresql://db/orders?password=pw-in-env"))
	assert.Equal(t, "parallelism 4", r.String("parallelism 4"), "values of other keys stay")
	assert.EqualError(t, r.Error(errors.New("submit hunter2-XYZ failed")), "submit ****** failed")

	rec := record.NewFakeRecorder(2)
	r.Recorder(rec).Eventf(nil, "Warning", "Error", "config %s", "hunter2-XYZ")
	assert.Equal(t, "Warning Error config ******", <-rec.Events)

	var lines []string
	log := r.Logger(funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{}))
	log.WithValues("conf", "hunter2-XYZ").Info("submitting with hunter2-XYZ", "err", errors.New("hunter2-XYZ"))
	log.Error(errors.New("boom hunter2-XYZ"), "failed")
	joined := strings.Join(lines, "\n")
	assert.NotContains(t, joined, "hunter2-XYZ")
	assert.Contains(t, joined, Mask)

	assert.Equal(t, "a b", New("x").String("a b"), "values shorter than 4 characters are not masked")
	var none *Redactor
	assert.Equal(t, "hunter2-XYZ", none.String("hunter2-XYZ"))
}
