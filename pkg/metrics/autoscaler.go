package metrics

import (
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// MaxAutoscalerVertices bounds the per-vertex series of one resource: a job graph of hundreds
// of vertices must not add hundreds of series per metric. The vertices kept are the first by
// id, so the same ones are reported from one evaluation to the next.
const MaxAutoscalerVertices = 20

// autoscalerVertexMetrics are the evaluated metrics exported per vertex (upstream's
// ScalingMetric names); others an evaluation reports are not exported.
var autoscalerVertexMetrics = []string{
	"LOAD", "TRUE_PROCESSING_RATE", "TARGET_DATA_RATE", "CATCH_UP_DATA_RATE", "LAG",
	"PARALLELISM", "RECOMMENDED_PARALLELISM",
}

var autoscalerVertexDesc = prometheus.NewDesc(namespace+"_autoscaler_vertex_metric",
	"The job autoscaler's last evaluation of a job vertex (upstream's AutoScaler.<vertex>.<metric>), at most "+
		"20 vertices per resource.", []string{"namespace", "kind", "name", "vertex", "metric"}, nil)

// Autoscaler holds the job autoscaler's metrics: scalings and errors per resource (upstream's
// AutoScaler.scalings and AutoScaler.errors) and the last evaluation of each vertex.
type Autoscaler struct {
	scalings *prometheus.CounterVec
	errors   *prometheus.CounterVec

	mu       sync.Mutex
	vertices map[resourceKey]map[string]map[string]float64
}

// NewAutoscaler creates the autoscaler metrics.
func NewAutoscaler() *Autoscaler {
	labels := []string{"namespace", "kind", "name"}
	return &Autoscaler{
		scalings: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "autoscaler_scalings_total",
			Help: "Parallelism changes the job autoscaler decided and applied, by resource."}, labels),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "autoscaler_errors_total",
			Help: "Job autoscaler evaluations that failed (metrics not collected), by resource."}, labels),
		vertices: map[resourceKey]map[string]map[string]float64{},
	}
}

// Collectors are the metrics to register.
func (a *Autoscaler) Collectors() []prometheus.Collector {
	return []prometheus.Collector{a.scalings, a.errors, vertexCollector{a}}
}

// Scaled counts one applied scaling of a resource. A nil Autoscaler records nothing.
func (a *Autoscaler) Scaled(ns, kind, name string) {
	if a != nil {
		a.scalings.WithLabelValues(ns, kind, name).Inc()
	}
}

// Error counts one failed evaluation of a resource.
func (a *Autoscaler) Error(ns, kind, name string) {
	if a != nil {
		a.errors.WithLabelValues(ns, kind, name).Inc()
	}
}

// Vertices replaces a resource's per-vertex evaluation (vertex id → metric → value).
func (a *Autoscaler) Vertices(ns, kind, name string, vertices map[string]map[string]float64) {
	if a == nil {
		return
	}
	ids := make([]string, 0, len(vertices))
	for id := range vertices {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	kept := map[string]map[string]float64{}
	for _, id := range ids[:min(len(ids), MaxAutoscalerVertices)] {
		m := map[string]float64{}
		for _, name := range autoscalerVertexMetrics {
			if v, ok := vertices[id][name]; ok {
				m[name] = v
			}
		}
		kept[id] = m
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.vertices[resourceKey{ns, kind, name}] = kept
}

// Forget drops the series of a resource that is gone.
func (a *Autoscaler) Forget(ns, kind, name string) {
	if a == nil {
		return
	}
	labels := prometheus.Labels{"namespace": ns, "kind": kind, "name": name}
	a.scalings.Delete(labels)
	a.errors.Delete(labels)
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.vertices, resourceKey{ns, kind, name})
}

// vertexCollector reports the kept evaluations at scrape time.
type vertexCollector struct{ a *Autoscaler }

func (c vertexCollector) Describe(ch chan<- *prometheus.Desc) { ch <- autoscalerVertexDesc }

func (c vertexCollector) Collect(ch chan<- prometheus.Metric) {
	c.a.mu.Lock()
	defer c.a.mu.Unlock()
	for k, vertices := range c.a.vertices {
		for id, m := range vertices {
			for name, v := range m {
				ch <- prometheus.MustNewConstMetric(autoscalerVertexDesc, prometheus.GaugeValue, v, k.ns, k.kind, k.name, id, name)
			}
		}
	}
}
