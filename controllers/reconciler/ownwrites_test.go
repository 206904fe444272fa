package reconciler

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

func TestOwnWritesRecognisesStaleCopies(t *testing.T) {
	copyAt := func(uid types.UID, rv string) *flinkv1beta1.FlinkDeployment {
		return &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{UID: uid, ResourceVersion: rv}}
	}
	w := NewOwnWrites()
	assert.False(t, w.stale(copyAt("a", "1")), "nothing written: nothing is known to be stale")

	w.wrote("a", "1", "2") // the write-ahead status
	w.wrote("a", "2", "3") // the final status
	assert.True(t, w.stale(copyAt("a", "1")), "older than both writes")
	assert.True(t, w.stale(copyAt("a", "2")), "older than the last write")
	assert.False(t, w.stale(copyAt("b", "1")), "another object")
	assert.False(t, w.stale(copyAt("a", "7")), "someone else's newer write is never stale")

	assert.False(t, w.stale(copyAt("a", "3")), "the latest own write")
	assert.False(t, w.stale(copyAt("a", "2")), "once the latest was read, older versions are forgotten")

	w.wrote("a", "3", "3") // a write that changed nothing records nothing
	assert.False(t, w.stale(copyAt("a", "3")))

	w.wrote("a", "3", "4")
	w.forget("a")
	assert.False(t, w.stale(copyAt("a", "3")), "forgotten with the object")

	var none *ownWrites // reconcilers built without SetupWithManager
	none.wrote("a", "1", "2")
	assert.False(t, none.stale(copyAt("a", "1")))
}
