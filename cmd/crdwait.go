package main

import (
	"context"
	"slices"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// servedKinds are the kinds the operator cannot start without. FlinkBlueGreenDeployment is not
// among them: installs that predate it (upstream's before 1.13, this operator's 0.1.0 bundle)
// have no CRD for it, and its controller is set up as before, waiting for the kind on its own.
var servedKinds = []string{"FlinkDeployment", "FlinkSessionJob", "FlinkStateSnapshot"}

// waitForKinds returns once the API server serves every kind of gv, or when ctx ends. The
// operator is often installed in one apply with its CRDs (make deploy, kubectl apply -k, a
// bundle), and a CRD is served a moment after it is created: a manager started before that
// fails on the first kind it cannot map, and the container is restarted. Waiting here makes
// that moment a log line instead of a restart, and a CRD that is never installed a message
// naming it, repeated every logEvery.
func waitForKinds(ctx context.Context, dc discovery.DiscoveryInterface, gv schema.GroupVersion, kinds []string, poll, logEvery time.Duration, log logr.Logger) error {
	var logged time.Time
	for {
		missing := missingKinds(dc, gv, kinds)
		if len(missing) == 0 {
			if !logged.IsZero() {
				log.Info("the custom resources are served; starting", "groupVersion", gv.String())
			}
			return nil
		}
		if time.Since(logged) >= logEvery {
			log.Info("waiting for the API server to serve the custom resources (are the CRDs installed?)", "groupVersion", gv.String(), "missing", missing)
			logged = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}

// missingKinds are the kinds of gv the API server does not serve (all of them when it cannot
// say).
func missingKinds(dc discovery.DiscoveryInterface, gv schema.GroupVersion, kinds []string) []string {
	list, err := dc.ServerResourcesForGroupVersion(gv.String())
	if err != nil {
		return kinds
	}
	var missing []string
	for _, k := range kinds {
		if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Kind == k }) {
			missing = append(missing, k)
		}
	}
	return missing
}
