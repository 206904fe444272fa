package reconciler

import (
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/operatorconfig"
)

// LiveSettings returns the operator settings in force now: the dynamic configuration's when
// there is one (so a changed ConfigMap applies from the next reconcile), else the fixed ones.
func LiveSettings(live *operatorconfig.Store, intervals Intervals, defaults flinkconf.Defaults, flink *clients.Factory) (Intervals, flinkconf.Defaults, *clients.Factory) {
	if live == nil {
		return intervals, defaults, flink
	}
	s := live.Get()
	fc := *flink
	if s.RESTTimeout > 0 {
		fc.Timeout = s.RESTTimeout
	}
	return Intervals{Reconcile: s.ReconcileInterval, ProgressCheck: s.ProgressCheckInterval, Deadline: intervals.Deadline}, s.Defaults, &fc
}
