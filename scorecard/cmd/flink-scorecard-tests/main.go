// Command flink-scorecard-tests is the entrypoint of the custom scorecard test image. The
// scorecard runner starts it in a pod of the namespace under test with the bundle unpacked at
// /bundle and the test name as its argument; it prints a v1alpha3.TestStatus as JSON.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	"github.com/operator-framework/api/pkg/manifests"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/scorecard"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: flink-scorecard-tests <test>")
		os.Exit(2)
	}
	status := run(os.Args[1])
	out, err := json.MarshalIndent(status, "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(string(out))
}

func run(name string) v1alpha3.TestStatus {
	fail := func(err error) v1alpha3.TestStatus {
		return v1alpha3.TestStatus{Results: []v1alpha3.TestResult{{Name: name, State: v1alpha3.ErrorState, Errors: []string{err.Error()}}}}
	}
	test, ok := scorecard.Find(name)
	if !ok {
		return fail(fmt.Errorf("unknown test %q", name))
	}
	bundle, err := manifests.GetBundleFromDir("/bundle")
	if err != nil {
		return fail(fmt.Errorf("read the bundle: %w", err))
	}
	sample, err := scorecard.SampleFromCSV(bundle.CSV)
	if err != nil {
		return fail(err)
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(flinkv1beta1.AddToScheme(scheme))
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fail(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	return scorecard.Status(ctx, test, scorecard.Env{Client: c, Namespace: os.Getenv("SCORECARD_NAMESPACE"), Sample: sample})
}
