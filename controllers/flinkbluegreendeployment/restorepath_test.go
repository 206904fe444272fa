package flinkbluegreendeployment

import (
	"testing"

	"github.com/stretchr/testify/assert"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

func TestSwitchRestorePathDropsTheLocalSchemeAsUpstream(t *testing.T) {
	for _, c := range []struct {
		name, location, defaultScheme, want string
	}{
		{"local savepoint", "file:/opt/flink/volume/flink-sp/savepoint-1", "", "/opt/flink/volume/flink-sp/savepoint-1"},
		{"local savepoint with an empty authority", "file:///sp/savepoint-1", "", "///sp/savepoint-1"},
		{"object storage keeps its scheme", "s3://bucket/sp/savepoint-1", "", "s3://bucket/sp/savepoint-1"},
		{"local default file system named", "file:/sp/savepoint-1", "file:///", "/sp/savepoint-1"},
		{"another default file system: the scheme stays", "file:/sp/savepoint-1", "hdfs://namenode:8020", "file:/sp/savepoint-1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conf := map[string]string{}
			if c.defaultScheme != "" {
				conf["fs.default-scheme"] = c.defaultScheme
			}
			fc := flinkv1beta1.NewFlinkConfiguration(conf)
			assert.Equal(t, c.want, switchRestorePath(c.location, &fc))
		})
	}
}
