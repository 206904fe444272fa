package jobs

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/upstreamoptions"
)

// ReasonUnsupportedOption: the resource sets an Apache operator option that has no effect here
// (the admission webhook warned whoever wrote it; the event tells whoever looks later).
const ReasonUnsupportedOption = "UnsupportedOption"

// OptionWarnings remembers the generation whose unhonoured options were reported, so each
// generation is reported once although it may take several reconciles before the status
// records it. Only resources with a generation not yet recorded are remembered.
type OptionWarnings struct {
	mu     sync.Mutex
	warned map[types.UID]int64
}

func NewOptionWarnings() *OptionWarnings { return &OptionWarnings{warned: map[types.UID]int64{}} }

// Report records a Warning event for each Apache operator option cfg sets that has no effect
// here, when obj's generation is not yet recorded in its status (observedGeneration) and has
// not been reported.
func (w *OptionWarnings) Report(rec record.EventRecorder, obj client.Object, cfg flinkv1beta1.FlinkConfiguration, observedGeneration int64) {
	if w == nil {
		return
	}
	w.mu.Lock()
	if obj.GetGeneration() == observedGeneration {
		delete(w.warned, obj.GetUID())
		w.mu.Unlock()
		return
	}
	if w.warned[obj.GetUID()] == obj.GetGeneration() {
		w.mu.Unlock()
		return
	}
	w.warned[obj.GetUID()] = obj.GetGeneration()
	w.mu.Unlock()
	conf, err := cfg.Flatten()
	if err != nil {
		return // refused by validation, which reports it
	}
	for _, msg := range upstreamoptions.Warnings(conf) {
		rec.Event(obj, corev1.EventTypeWarning, ReasonUnsupportedOption, msg)
	}
}
