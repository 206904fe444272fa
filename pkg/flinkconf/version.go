package flinkconf

import (
	"slices"
	"strconv"
	"strings"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink"
)

// knownVersions are the values of spec.flinkVersion the schema admits.
var knownVersions = []flinkv1beta1.FlinkVersion{
	flinkv1beta1.FlinkVersion1_13, flinkv1beta1.FlinkVersion1_14, flinkv1beta1.FlinkVersion1_15,
	flinkv1beta1.FlinkVersion1_16, flinkv1beta1.FlinkVersion1_17, flinkv1beta1.FlinkVersion1_18,
	flinkv1beta1.FlinkVersion1_19, flinkv1beta1.FlinkVersion1_20, flinkv1beta1.FlinkVersion2_0,
	flinkv1beta1.FlinkVersion2_1, flinkv1beta1.FlinkVersion2_2, flinkv1beta1.FlinkVersion2_3,
	flinkv1beta1.FlinkVersion2_4,
}

// ParseVersion reads a spec.flinkVersion (v1_20, v2_0) as the Flink release line it names, so
// that versions from a resource and from a running JobManager (flink.ParseVersion) compare
// the same way (flink.Version.AtLeast). False when v names no release line ("" included).
func ParseVersion(v flinkv1beta1.FlinkVersion) (flink.Version, bool) {
	major, minor, ok := strings.Cut(strings.TrimPrefix(string(v), "v"), "_")
	if !ok || !strings.HasPrefix(string(v), "v") {
		return flink.Version{}, false
	}
	ma, err1 := strconv.Atoi(major)
	mi, err2 := strconv.Atoi(minor)
	if err1 != nil || err2 != nil || ma < 0 || mi < 0 {
		return flink.Version{}, false
	}
	return flink.Version{Major: ma, Minor: mi}, true
}

// AtLeast reports whether spec.flinkVersion v is Flink major.minor or newer; false when v names
// no version (unset included), so callers decide what an unset version means.
func AtLeast(v flinkv1beta1.FlinkVersion, major, minor int) bool {
	fv, ok := ParseVersion(v)
	return ok && fv.AtLeast(major, minor)
}

// atLeastVersion reports whether v is min or newer.
func atLeastVersion(v, min flinkv1beta1.FlinkVersion) bool {
	m, ok := ParseVersion(min)
	return ok && AtLeast(v, m.Major, m.Minor)
}

// compareVersions orders spec versions from oldest to newest, for sorting.
func compareVersions(a, b flinkv1beta1.FlinkVersion) int {
	switch {
	case !atLeastVersion(a, b):
		return -1
	case !atLeastVersion(b, a):
		return 1
	}
	return 0
}

// isKnownVersion reports whether the schema admits v as spec.flinkVersion.
func isKnownVersion(v flinkv1beta1.FlinkVersion) bool { return slices.Contains(knownVersions, v) }
