// Command flinkcds dumps the class-data sharing archives of installed Flink distributions
// (package flinkcluster, cds.go), so that every JobManager, TaskManager and memory calculator
// the tests start maps the distribution's classes instead of loading them from the jars.
//
// For each distribution it runs the memory calculator once, then a session cluster through
// what the tests do most: a job submitted from a jar, checkpoints, a savepoint, a stop with a
// savepoint. Each JVM writes its archive when it exits. The archives land in <home>/cds/ and
// are valid only for this JDK and these jar paths, so `make flink-dist` runs this for every
// distribution where it is installed (the install cache shares one installation between
// clones): about 25 s per distribution the first time, nothing once its stamp matches.
//
// Usage: flinkcds FLINK_HOME...   (each FLINK_HOME is bin/flink/<version>)
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/test/flinkcluster"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: flinkcds FLINK_HOME...")
		os.Exit(2)
	}
	// The distributions are dumped side by side: each run is mostly one JVM waiting on another.
	errs := make([]error, len(os.Args)-1)
	var wg sync.WaitGroup
	for i, home := range os.Args[1:] {
		wg.Go(func() { errs[i] = dumpOnce(home) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(os.Stderr, "flinkcds: %v\n", err)
		os.Exit(1)
	}
}

// dumpOnce dumps the archives of the distribution in home unless its stamp says they were
// dumped for this JDK and these jars. The distribution may be shared by clones (the install
// cache links it), so a lock keeps two runs from dumping it at once.
func dumpOnce(home string) error {
	start := time.Now()
	d, err := flinkcluster.DistAt(home)
	if err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(d.Home, ".cds.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	want, err := stamp(d)
	if err != nil {
		return fmt.Errorf("flink %s: %w", d.Version, err)
	}
	stampFile := filepath.Join(d.Home, "cds", "stamp")
	if got, err := os.ReadFile(stampFile); err == nil && string(got) == want {
		fmt.Printf("flinkcds: Flink %s: archives up to date in %s\n", d.Version, filepath.Dir(stampFile))
		return nil
	}
	if err := dump(d); err != nil {
		return fmt.Errorf("flink %s: %w", d.Version, err)
	}
	if err := os.WriteFile(stampFile, []byte(want), 0o644); err != nil {
		return err
	}
	fmt.Printf("flinkcds: Flink %s: archives dumped in %s (%s)\n", d.Version, filepath.Dir(stampFile),
		time.Since(start).Round(100*time.Millisecond))
	return nil
}

// stamp names what the archives depend on: the JDK (its version output names the build) and
// every jar on the classpaths, by path, size and modification time, as the JVM checks them.
func stamp(d flinkcluster.Dist) (string, error) {
	version, err := exec.Command("java", "-version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("java -version: %w: %s", err, version)
	}
	cp, err := d.MemoryCalculatorClasspath()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", version)
	for _, jar := range filepath.SplitList(cp) {
		fi, err := os.Stat(jar)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s %d %d\n", jar, fi.Size(), fi.ModTime().UnixNano())
	}
	return b.String(), nil
}

func dump(d flinkcluster.Dist) error {
	dir := filepath.Dir(d.SharedArchive(flinkcluster.RoleJobManager))
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "flinkcds-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	if err := dumpMemoryCalculator(d, work); err != nil {
		return fmt.Errorf("memory calculator: %w", err)
	}
	c, err := flinkcluster.Start(filepath.Join(work, "cluster"), d, flinkcluster.Options{DumpSharedArchives: true})
	if c != nil {
		defer c.Stop()
	}
	if err != nil {
		return fmt.Errorf("session cluster: %w", err)
	}
	if err := exercise(d, c.RESTURL); err != nil {
		return fmt.Errorf("job on the session cluster: %w", err)
	}
	c.Stop()
	_ = os.Remove(filepath.Join(dir, "stamp"))
	for _, role := range flinkcluster.Roles {
		path := d.SharedArchive(role)
		if err := os.Rename(path+".dumping", path); err != nil {
			return fmt.Errorf("the %s wrote no archive (see %s): %w", role, filepath.Join(work, "cluster", "log"), err)
		}
	}
	return nil
}

// dumpMemoryCalculator runs BashJavaUtils as the node agent does before a TaskManager starts.
func dumpMemoryCalculator(d flinkcluster.Dist, work string) error {
	conf := filepath.Join(work, "calculator-conf")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		return err
	}
	file := "flink-conf.yaml"
	if d.AtLeast(1, 19) {
		file = "config.yaml"
	}
	if err := os.WriteFile(filepath.Join(conf, file),
		[]byte("jobmanager.memory.process.size: 1024m\ntaskmanager.memory.process.size: 1024m\n"), 0o644); err != nil {
		return err
	}
	cp, err := d.MemoryCalculatorClasspath()
	if err != nil {
		return err
	}
	for _, params := range []string{"GET_TM_RESOURCE_PARAMS"} {
		args := append([]string{"-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"}, d.DumpArchiveFlags(flinkcluster.RoleMemoryCalculator)...)
		args = append(args, "-cp", cp, "org.apache.flink.runtime.util.bash.BashJavaUtils", params, "--configDir", conf)
		if out, err := exec.Command("java", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
	}
	return nil
}

// exercise runs TopSpeedWindowing from its jar, waits for a checkpoint, takes a savepoint and
// stops the job with one, through the operator's own REST client.
func exercise(d flinkcluster.Dist, url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client, err := flink.New(flink.Options{URL: url})
	if err != nil {
		return err
	}
	defer client.Close()
	jar, err := os.Open(d.Example("TopSpeedWindowing"))
	if err != nil {
		return err
	}
	defer jar.Close()
	jarID, err := client.UploadJar(ctx, "TopSpeedWindowing.jar", jar)
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	jobID, err := client.RunJar(ctx, jarID, flink.RunJarRequest{})
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if err := poll(ctx, "a completed checkpoint", func() (bool, error) {
		stats, err := client.CheckpointStatistics(ctx, jobID)
		return err == nil && stats.Counts.Completed > 0, nil
	}); err != nil {
		return err
	}
	savepoint := flink.SavepointRequest{TriggerID: flink.NewTriggerID()}
	if err := client.TriggerSavepoint(ctx, jobID, savepoint); err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	if err := poll(ctx, "the savepoint", func() (bool, error) {
		r, err := client.SavepointStatus(ctx, jobID, savepoint.TriggerID)
		if err != nil || r.State != flink.OperationCompleted {
			return false, nil
		}
		if r.Failure != nil {
			return true, errors.New("the savepoint failed")
		}
		return true, nil
	}); err != nil {
		return err
	}
	if err := client.StopWithSavepoint(ctx, jobID, flink.StopRequest{TriggerID: flink.NewTriggerID()}); err != nil {
		return fmt.Errorf("stop with a savepoint: %w", err)
	}
	return poll(ctx, "the job to finish", func() (bool, error) {
		state, err := client.JobStatus(ctx, jobID)
		return err == nil && state == flink.JobFinished, nil
	})
}

func poll(ctx context.Context, what string, done func() (bool, error)) error {
	for {
		ok, err := done()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("waiting for %s", what), ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
