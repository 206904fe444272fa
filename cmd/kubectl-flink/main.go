// Command kubectl-flink is the kubectl flink plugin (pkg/kubectlflink). Installed on the PATH,
// kubectl runs it as `kubectl flink`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flink-operator/flink-operator/pkg/kubectlflink"
)

// version is stamped by the build (make kubectl-flink: -X main.version=$(VERSION)).
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	err := kubectlflink.NewCommand(version, streams).ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
