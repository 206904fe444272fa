package main

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// stuckReconcilesCheck is the name of the liveness check stuckReconciles builds
// (/healthz/stuck-reconciles).
const stuckReconcilesCheck = "stuck-reconciles"

// longestRunningMetric is the workqueue gauge controller-runtime keeps per controller: how long
// the longest reconcile still in progress has been running.
const longestRunningMetric = ctrlmetrics.WorkQueueSubsystem + "_" + ctrlmetrics.LongestRunningProcessorKey

// stuckReconciles fails liveness when some controller has had a reconcile in progress for
// longer than after. Every reconcile runs under --reconcile-timeout, so one that outlives
// twice that ignores its cancelled context (a call that never returns): its worker is lost
// until the process restarts, and a ping would keep reporting the process healthy.
func stuckReconciles(metrics prometheus.Gatherer, after time.Duration) healthz.Checker {
	return func(*http.Request) error {
		families, err := metrics.Gather()
		if err != nil {
			return nil // metrics that cannot be read say nothing about the workers
		}
		// Every stuck controller is named, not only the first: the message is what an operator
		// reads in the probe's failure event.
		var stuck []string
		for _, f := range families {
			if f.GetName() != longestRunningMetric {
				continue
			}
			for _, m := range f.GetMetric() {
				running := time.Duration(m.GetGauge().GetValue() * float64(time.Second))
				if running <= after {
					continue
				}
				name := "unknown"
				for _, l := range m.GetLabel() {
					if l.GetName() == "name" {
						name = l.GetValue()
					}
				}
				stuck = append(stuck, fmt.Sprintf("controller %s: a reconcile has been running for %s, longer than %s", name, running.Round(time.Second), after))
			}
		}
		if len(stuck) > 0 {
			sort.Strings(stuck)
			return errors.New(strings.Join(stuck, "; "))
		}
		return nil
	}
}
