package flinkcluster

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The JobManager and TaskManager map the archives `make flink-cds` dumped. A JVM whose
// classpath differs in any way from the dump's (a path reached through another link, a jar
// added) silently loads every class from the jars again; this test notices.
func TestJobManagerAndTaskManagerMapTheSharedArchives(t *testing.T) {
	for _, version := range Versions(t) {
		t.Run(version, func(t *testing.T) {
			d := DistFor(t, version)
			for _, role := range Roles {
				_, err := os.Stat(d.SharedArchive(role))
				require.NoError(t, err, "the %s archive of Flink %s is missing: run `make flink-cds`", role, version)
			}
			c := StartSession(t, d, Options{})
			for role, p := range map[Role]*process{RoleJobManager: c.jm, RoleTaskManager: c.tm} {
				maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", p.cmd.Process.Pid))
				require.NoError(t, err)
				require.True(t, strings.Contains(string(maps), d.SharedArchive(role)),
					"the %s does not map %s; its output:\n%s", role, d.SharedArchive(role), c.logTail())
			}
		})
	}
}

// A JVM writing its class-data archive is given minutes to exit, not the 30 s of a plain stop:
// SIGKILL mid-dump leaves no archive.
func TestStopWaitsLongerForAnArchiveBeingDumped(t *testing.T) {
	assert.Equal(t, 30*time.Second, stopGrace(false))
	assert.GreaterOrEqual(t, stopGrace(true), 5*time.Minute)
}
