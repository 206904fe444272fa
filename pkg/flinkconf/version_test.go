package flinkconf

import (
	"testing"

	"github.com/stretchr/testify/assert"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink"
)

// TestSpecVersions: a spec.flinkVersion reads as the release line it names, and compares as a
// running JobManager's version does; what names no version is never "at least" anything.
func TestSpecVersions(t *testing.T) {
	for _, tt := range []struct {
		v    flinkv1beta1.FlinkVersion
		want flink.Version
		ok   bool
	}{
		{flinkv1beta1.FlinkVersion1_13, flink.Version{Major: 1, Minor: 13}, true},
		{flinkv1beta1.FlinkVersion1_20, flink.Version{Major: 1, Minor: 20}, true},
		{flinkv1beta1.FlinkVersion2_0, flink.Version{Major: 2, Minor: 0}, true},
		{flinkv1beta1.FlinkVersion2_4, flink.Version{Major: 2, Minor: 4}, true},
		{"", flink.Version{}, false},
		{"1_20", flink.Version{}, false},
		{"v1", flink.Version{}, false},
		{"v1_x", flink.Version{}, false},
	} {
		got, ok := ParseVersion(tt.v)
		assert.Equal(t, tt.ok, ok, "%q", tt.v)
		assert.Equal(t, tt.want, got, "%q", tt.v)
		assert.Equal(t, tt.ok, AtLeast(tt.v, 0, 0), "%q", tt.v)
	}
	assert.True(t, AtLeast(flinkv1beta1.FlinkVersion1_18, 1, 18))
	assert.False(t, AtLeast(flinkv1beta1.FlinkVersion1_17, 1, 18))
	assert.True(t, AtLeast(flinkv1beta1.FlinkVersion2_0, 1, 20))
	assert.False(t, AtLeast(flinkv1beta1.FlinkVersion1_20, 2, 0))

	// The schema's versions are in release order, each newer than the ones before it.
	for i, older := range knownVersions {
		for _, newer := range knownVersions[i+1:] {
			assert.Equal(t, -1, compareVersions(older, newer), "%s < %s", older, newer)
			assert.Equal(t, 1, compareVersions(newer, older), "%s > %s", newer, older)
		}
		assert.Equal(t, 0, compareVersions(older, older))
	}
}
