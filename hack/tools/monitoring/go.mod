// Pins the Prometheus Operator release whose CRDs (ServiceMonitor, PrometheusRule) the tests
// install, read from the module cache (example/prometheus-operator-crd; test/monitoring's MonitoringCRDs downloads it).
module github.com/flink-operator/flink-operator/hack/tools/monitoring

go 1.24.4

require github.com/prometheus-operator/prometheus-operator v0.85.0
