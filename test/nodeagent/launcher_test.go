package nodeagent

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFlinkLauncherExecsTheJVMWithTheCalculatorsResults runs the launcher with a stand-in
// calculator and a stand-in JVM that prints its PID and arguments: the flags and properties go
// where the markers are, split into words as Flink's scripts split them, the other arguments stay
// whole, and the JVM is the launcher's own process (the container's PID and start time).
func TestFlinkLauncherExecsTheJVMWithTheCalculatorsResults(t *testing.T) {
	calculator := []string{"sh", "-c", `echo "log line"; echo "BASH_JAVA_UTILS_EXEC_RESULT:-Xmx10m -Xms10m"; echo "BASH_JAVA_UTILS_EXEC_RESULT:-Da=1 -Db=*"`}
	jvm := []string{"sh", "-c", `echo "$$"; printf '%s\n' "$@"`, "jvm", "-first", jvmMemoryMarker, "an argument with spaces", dynamicPropertiesMarker, "--last"}
	cmd := exec.Command("bash", launcherArgs(calculator, jvm)...)
	out, err := cmd.Output()
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Equal(t, strconv.Itoa(cmd.Process.Pid), lines[0], "the JVM replaces the launcher")
	require.Equal(t, []string{"-first", "-Xmx10m", "-Xms10m", "an argument with spaces", "-Da=1", "-Db=*", "--last"}, lines[1:])
}

func TestFlinkLauncherFailsTheContainerWhenTheCalculatorFails(t *testing.T) {
	for name, calculator := range map[string][]string{
		"the calculator fails":            {"sh", "-c", `echo "[ERROR] bad memory configuration"; exit 3`},
		"the calculator prints no result": {"sh", "-c", `echo "BASH_JAVA_UTILS_EXEC_RESULT:-Xmx10m"`},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command("bash", launcherArgs(calculator, []string{"echo", "the JVM ran"})...).CombinedOutput()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit)
			require.Equal(t, 1, exit.ExitCode())
			require.Contains(t, string(out), "flink memory configuration")
			require.NotContains(t, string(out), "the JVM ran")
		})
	}
}
