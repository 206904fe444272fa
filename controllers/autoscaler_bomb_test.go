package controllers

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/pkg/autoscaler"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

func gzipBase64(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	_, err := w.Write([]byte(s))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// stateBombs is what a tenant can write into the autoscaler-<name> ConfigMap: a gzip value of
// some 27 KB that expands to 20 MiB of YAML, and 300 instant keys with huge exponents.
func stateBombs(t *testing.T) map[string]string {
	var keys strings.Builder
	keys.WriteString("scalingRecords:\n")
	for i := 1; i <= 300; i++ {
		fmt.Fprintf(&keys, "  %de-999999: {}\n", i)
	}
	return map[string]string{
		autoscaler.KeyCollectedMetrics: gzipBase64(t, "x: ["+strings.Repeat("0,", 10<<20)+"0]\n"),
		autoscaler.KeyScalingTracking:  gzipBase64(t, keys.String()),
	}
}

// TestAutoscalerStateBombKeepsTheOperatorUp: while a tenant keeps writing decompression and
// number-parsing bombs into the autoscaler ConfigMap of its deployment (with the deployment's
// owner reference, as the operator wrote it), the operator stays within its memory, keeps
// reconciling, and a spec change still reaches Flink (the upgrade's stop-with-savepoint).
func TestAutoscalerStateBombKeepsTheOperatorUp(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ns := testEnv(t).NewNamespace(t, "autoscale-bomb")
	fl := fakeflink.New(t)
	k := &cluster{t: t, c: c, flink: fl}
	source := &scriptedMetrics{flink: fl, busy: 300, rate: 1000}
	clock := &stepClock{now: time.Now(), step: 20 * time.Second}
	events, _ := startManager(t, managerOptions{namespaces: []string{ns}, setup: autoscalingController(fl, source, clock.Now)})
	const name = "job"
	jobID := autoscaled(t, c, k, ns, name, nil)
	dep := get(t, c, ns, name)
	bombs := stateBombs(t)
	key := client.ObjectKey{Namespace: ns, Name: jobs.AutoscalerConfigMapName(name)}

	// The tenant rewrites the bombs whenever the operator has replaced them.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var written atomic.Int32
	writer := make(chan struct{})
	go func() {
		defer close(writer)
		for ctx.Err() == nil {
			var cm corev1.ConfigMap
			err := c.Get(ctx, key, &cm)
			switch {
			case apierrors.IsNotFound(err):
				cm = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: flinkv1beta1.GroupVersion.String(), Kind: "FlinkDeployment", Name: name, UID: dep.UID}}},
					Data: bombs}
				if c.Create(ctx, &cm) == nil {
					written.Add(1)
				}
			case err == nil && cm.Data[autoscaler.KeyCollectedMetrics] != bombs[autoscaler.KeyCollectedMetrics]:
				if cm.Data == nil {
					cm.Data = map[string]string{}
				}
				for k, v := range bombs {
					cm.Data[k] = v
				}
				if c.Update(ctx, &cm) == nil {
					written.Add(1)
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	// The test process runs the operator: its heap is sampled throughout.
	var maxHeap atomic.Uint64
	sampler := make(chan struct{})
	go func() {
		defer close(sampler)
		for ctx.Err() == nil {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > maxHeap.Load() {
				maxHeap.Store(m.HeapAlloc)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()

	wait.For(t, 30*time.Second, "the bombs read (and dropped) by the operator a few times", func() bool {
		return written.Load() >= 3
	}, func() string { return fmt.Sprintf("written %d; events %v", written.Load(), events.events) })
	events.seen(t, "Autoscaler state entries dropped")

	before := len(fl.Requests())
	update(t, c, ns, name, func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.Args = []string{"--new"} })
	wait.For(t, 30*time.Second, "the upgrade's stop-with-savepoint at Flink", func() bool {
		return slices.Contains(fl.Requests()[before:], "POST /jobs/"+jobID+"/stop")
	}, func() string { return fmt.Sprintf("requests since the spec change %v", fl.Requests()[before:]) })
	cancel()
	<-writer
	<-sampler
	assert.Less(t, maxHeap.Load(), uint64(512<<20), "the operator's heap stays small (the old decoder took 2.4 GiB per read)")
	t.Logf("bombs written %d times; largest heap %d MiB", written.Load(), maxHeap.Load()>>20)
}
