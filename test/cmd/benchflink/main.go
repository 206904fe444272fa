// Command benchflink runs the benchmark of package test/benchflink (`make bench-flink`): real
// Flink jobs on the local cluster, the operator with its default options, each flow's time
// split into Flink's own and the operator's and Kubernetes' overhead. It prints a Markdown table
// and writes the result as JSON. Environment: BENCHFLINK_JOBS (jobs side by side, default 3),
// BENCHFLINK_RUNS (3), BENCHFLINK_OUT (bin/bench/flink-result.json), BENCHFLINK_DIR (the local
// cluster's state and logs, bin/bench/flink-run).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/flink-operator/flink-operator/test/envflag"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flink-operator/flink-operator/test/benchflink"
	"github.com/flink-operator/flink-operator/test/podnet"
)

func main() {
	// As the e2e suite: pods in a network namespace of their own where one can be made, so
	// JobManagers of other local clusters on the machine do not share addresses with ours.
	podnet.Enter("benchflink", false)
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchflink:", err)
		os.Exit(1)
	}
}

func run() error {
	jobs, err := envflag.PositiveInt("BENCHFLINK_JOBS", 3)
	if err != nil {
		return err
	}
	runs, err := envflag.PositiveInt("BENCHFLINK_RUNS", 3)
	if err != nil {
		return err
	}
	out := envflag.String("BENCHFLINK_OUT", "bin/bench/flink-result.json")
	// The API clients print server warnings through controller-runtime's logger.
	ctrllog.SetLogger(logr.Discard())
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	res, err := benchflink.Run(ctx, benchflink.Options{Jobs: jobs, Runs: runs,
		Dir: envflag.String("BENCHFLINK_DIR", "bin/bench/flink-run"), Log: os.Stderr})
	if err != nil {
		return err
	}
	fmt.Print(res.Table())
	if err := res.WriteJSON(out); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	fmt.Printf("\nJSON: %s\n", out)
	return nil
}
