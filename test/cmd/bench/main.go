// Command bench runs the scale benchmark of package test/bench (`make bench`): it prints the
// table and writes the result as JSON. Environment: BENCH_N (default 1000), BENCH_CONCURRENCY
// (50), BENCH_STEADY (60s), BENCH_OUT (bin/bench/result.json), BENCH_OPERATOR_ARGS (operator
// flags to measure, e.g. --reconcile-parallelism=50), BENCH_UNRELATED (Pods and as many
// ConfigMaps not of Flink's, to compare the operator's memory without and with them; 0: not
// measured), BENCH_LIMITS=0 (leave out the limit runs); KUBEBUILDER_ASSETS names the kube-apiserver and etcd binaries. BENCH_RUNNING=1 (or -running) backs every JobManager with
// the fake Flink REST server: jobs run, and BENCH_UPGRADES (100) of them are upgraded with a
// savepoint at once; BENCH_OBSERVE_INTERVAL and BENCH_PROGRESS_CHECK set the operator's
// --reconcile-interval and --progress-check-interval (default: the operator's, 60s and 10s).
//
// It sets controller-runtime's logger to discard: the running mode's FlinkDeployment cache
// logs through it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/flink-operator/flink-operator/test/envflag"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flink-operator/flink-operator/test/bench"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	n, err := envflag.PositiveInt("BENCH_N", 1000)
	if err != nil {
		return err
	}
	conc, err := envflag.PositiveInt("BENCH_CONCURRENCY", 50)
	if err != nil {
		return err
	}
	steady, err := envflag.Duration("BENCH_STEADY", 60*time.Second)
	if err != nil {
		return err
	}
	unrelated := 0
	if os.Getenv("BENCH_UNRELATED") != "" {
		if unrelated, err = envflag.PositiveInt("BENCH_UNRELATED", 0); err != nil {
			return err
		}
	}
	out := flag.String("out", envflag.String("BENCH_OUT", "bin/bench/result.json"), "where the JSON result is written (env BENCH_OUT)")
	dir := flag.String("dir", "bin/bench/run", "working directory: operator binary, kubeconfig, log")
	operatorArgs := flag.String("operator-args", os.Getenv("BENCH_OPERATOR_ARGS"), "operator flags added to the bench's, space-separated (env BENCH_OPERATOR_ARGS)")
	runningMode := flag.Bool("running", os.Getenv("BENCH_RUNNING") == "1",
		"back every JobManager with the fake Flink REST server: running jobs and savepoint upgrades (env BENCH_RUNNING=1)")
	flag.Parse()
	var runningOpts *bench.RunningOptions
	if *runningMode {
		upgrades, err := envflag.PositiveInt("BENCH_UPGRADES", 100)
		if err != nil {
			return err
		}
		observe, err := envflag.Duration("BENCH_OBSERVE_INTERVAL", 0)
		if err != nil {
			return err
		}
		progress, err := envflag.Duration("BENCH_PROGRESS_CHECK", 0)
		if err != nil {
			return err
		}
		runningOpts = &bench.RunningOptions{Upgrades: min(upgrades, n), ObserveInterval: observe, ProgressCheck: progress}
	}
	ctrllog.SetLogger(logr.Discard())

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	res, err := bench.Run(ctx, bench.Options{N: n, Concurrency: conc, Steady: steady, Settle: 2 * time.Minute,
		Dir: *dir, Log: os.Stderr, OperatorArgs: strings.Fields(*operatorArgs), Running: runningOpts, Unrelated: unrelated,
		SkipLimits: os.Getenv("BENCH_LIMITS") == "0"})
	if err != nil {
		return err
	}
	fmt.Print(res.Table())
	if err := res.WriteJSON(*out); err != nil {
		return fmt.Errorf("write %s: %w", *out, err)
	}
	fmt.Printf("\nJSON: %s\n", *out)
	// Where the operator's live heap is at the end of the steady window, by function.
	fmt.Printf("\nHeap profile: %s (go tool pprof -sample_index=inuse_space)\n", res.HeapProfile)
	top := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=20", "-sample_index=inuse_space", res.HeapProfile)
	top.Stdout, top.Stderr = os.Stdout, os.Stderr
	if err := top.Run(); err != nil {
		return fmt.Errorf("go tool pprof: %w", err)
	}
	return nil
}
