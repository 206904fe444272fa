package reconciler

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ownWrites remembers, per object, the resourceVersions the reconciler's own writes replaced,
// so that a reconcile reading the object from an informer cache that has not caught up with
// those writes yet is recognised and skipped. Acting on such a copy is safe (every status write
// is conditional on the resourceVersion read, so it fails with a conflict) but wasteful, and
// common: each write of a reconcile triggers the next one, which may start before the watch
// delivered the write. On a new FlinkDeployment the stale copy still says UPGRADING, and the
// cluster would be applied a second time only to have the status write refused.
//
// Only equality of resourceVersions is used (they are opaque): a copy whose version is one the
// reconciler itself replaced is certainly older than what the API server holds. The versions
// replaced are forgotten once a reconcile reads the latest one written.
type ownWrites struct {
	mu      sync.Mutex
	objects map[types.UID]*writtenVersions
}

type writtenVersions struct {
	latest   string
	replaced map[string]bool
}

func NewOwnWrites() *ownWrites { return &ownWrites{objects: map[types.UID]*writtenVersions{}} }

// wrote records a write of the object that replaced version before with version after. A nil
// tracker records nothing.
func (w *ownWrites) wrote(uid types.UID, before, after string) {
	if w == nil || uid == "" || before == "" || after == "" || before == after {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	v := w.objects[uid]
	if v == nil {
		v = &writtenVersions{replaced: map[string]bool{}}
		w.objects[uid] = v
	}
	v.replaced[before] = true
	v.latest = after
}

// stale reports whether obj is a copy older than one of the reconciler's own writes; a read of
// the latest version written forgets the older ones.
func (w *ownWrites) stale(obj client.Object) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	v := w.objects[obj.GetUID()]
	if v == nil {
		return false
	}
	rv := obj.GetResourceVersion()
	if rv == v.latest {
		v.replaced = map[string]bool{}
		return false
	}
	return v.replaced[rv]
}

// forget drops what is known of an object that is gone.
func (w *ownWrites) forget(uid types.UID) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.objects, uid)
}
