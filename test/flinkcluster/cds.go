package flinkcluster

import (
	"os"
	"path/filepath"
)

// Class-data sharing. A Flink JVM spends most of its start loading and verifying the same
// ten thousand classes from the distribution's jars; a class-data sharing archive (JDK 17's
// dynamic AppCDS) holds them already parsed, and a JVM that maps it starts with about a third
// less CPU (measured on this machine: a JobManager 4.0 → 2.6 CPU-seconds, the memory
// calculator 0.9 → 0.6). The test suites start hundreds of these JVMs on two cores.
//
// An archive is only valid for the JDK that wrote it and for the exact jar paths (and
// modification times) it was dumped with: it is dumped in the clone, next to the
// distribution, by `make flink-dist` (test/cmd/flinkcds), never cached across clones. A
// JVM given an archive that does not match warns once and loads classes from the jars, as
// without one, so a stale archive costs time, never a result.

// Role is a kind of Flink JVM; each has an archive of its own, dumped from a run of it.
type Role string

const (
	RoleJobManager  Role = "jobmanager"
	RoleTaskManager Role = "taskmanager"
	// RoleMemoryCalculator is BashJavaUtils, which Flink's scripts (and the node agent)
	// run before each JobManager and TaskManager to work out their memory flags.
	RoleMemoryCalculator Role = "memory-calculator"
)

// Roles lists every role with an archive.
var Roles = []Role{RoleJobManager, RoleTaskManager, RoleMemoryCalculator}

// SharedArchive is where the role's archive of this distribution is.
func (d Dist) SharedArchive(role Role) string {
	return filepath.Join(d.Home, "cds", string(role)+".jsa")
}

// SharedArchiveFlags are the JVM flags that map the role's archive; none when it was not
// dumped, so a JVM started before `make flink-dist` ran still starts, only slower.
func (d Dist) SharedArchiveFlags(role Role) []string {
	path := d.SharedArchive(role)
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	return []string{"-XX:SharedArchiveFile=" + path}
}

// dumpArchiveFlags make the JVM write the role's archive when it exits, under a temporary
// name that cmd/flinkcds renames once the JVM exited (a JVM killed mid-dump leaves a file
// no JVM must map).
func (d Dist) dumpArchiveFlags(role Role) []string {
	return []string{"-XX:ArchiveClassesAtExit=" + d.SharedArchive(role) + ".dumping"}
}

// DumpArchiveFlags are dumpArchiveFlags, for the memory calculator cmd/flinkcds runs itself.
func (d Dist) DumpArchiveFlags(role Role) []string { return d.dumpArchiveFlags(role) }

// MemoryCalculatorClasspath is the classpath BashJavaUtils runs with, as Flink's config.sh
// builds it: bash-java-utils.jar first, then the distribution's lib/.
func (d Dist) MemoryCalculatorClasspath() (string, error) {
	cp, err := d.classpath()
	if err != nil {
		return "", err
	}
	return filepath.Join(d.Home, "bin", "bash-java-utils.jar") + string(os.PathListSeparator) + cp, nil
}
