// Package kubectlflink is the kubectl flink plugin: one screen of status for a Flink resource,
// savepoints, suspend, resume and restart as patches, JobManager and TaskManager logs, the
// autoscaler's latest decision, and a dry run of what this operator does with resources the
// Apache operator managed. The commands only read, except savepoint (one FlinkStateSnapshot)
// and suspend, resume and restart (one merge patch of the spec each).
package kubectlflink

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// Clients are what the commands talk to the cluster with.
type Clients struct {
	// Client reads and writes the Flink resources (typed and unstructured) and core objects.
	Client client.Client
	// Kube streams pod logs, which controller-runtime's client does not.
	Kube kubernetes.Interface
	// Namespace is the namespace of -n, else the kubeconfig context's.
	Namespace string
}

// Connect builds the Clients of a command; tests give fakes.
type Connect func() (*Clients, error)

// plugin is what every command shares.
type plugin struct {
	connect Connect
	streams genericiooptions.IOStreams
	now     func() time.Time
	// poll is how often savepoint --wait looks at the snapshot.
	poll time.Duration
}

// NewCommand is the kubectl-flink root command. version is printed by `kubectl flink version`.
func NewCommand(version string, streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	root := newRoot(version, streams, func() (*Clients, error) { return connectWith(flags) })
	flags.AddFlags(root.PersistentFlags())
	return root
}

// connectTo connects and reads the command's NAME argument (with --kind) as its target, in the
// namespace of -n or the context's.
func (p *plugin) connectTo(arg, kind string) (*Clients, Target, error) {
	c, err := p.connect()
	if err != nil {
		return nil, Target{}, err
	}
	t, err := parseTarget(arg, kind, c.Namespace)
	if err != nil {
		return nil, Target{}, err
	}
	return c, t, nil
}

// Option changes how the commands run (tests).
type Option func(*plugin)

// WithClock sets the clock ages are printed against.
func WithClock(now func() time.Time) Option { return func(p *plugin) { p.now = now } }

// WithPoll sets how often savepoint --wait looks at the snapshot.
func WithPoll(every time.Duration) Option { return func(p *plugin) { p.poll = every } }

// NewCommandWith is the root command on the given clients (tests).
func NewCommandWith(version string, streams genericiooptions.IOStreams, connect Connect, opts ...Option) *cobra.Command {
	return newRoot(version, streams, connect, opts...)
}

func newRoot(version string, streams genericiooptions.IOStreams, connect Connect, opts ...Option) *cobra.Command {
	p := &plugin{connect: connect, streams: streams, now: time.Now, poll: 2 * time.Second}
	for _, o := range opts {
		o(p)
	}
	root := &cobra.Command{
		Use:   "kubectl-flink",
		Short: "Look after Flink resources managed by flink-operator",
		Long: "kubectl flink shows and acts on FlinkDeployments, FlinkSessionJobs, FlinkStateSnapshots and\n" +
			"FlinkBlueGreenDeployments (flink.apache.org/v1beta1).",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.AddCommand(
		p.statusCommand(),
		p.savepointCommand(),
		p.suspendCommand(), p.resumeCommand(), p.restartCommand(),
		p.logsCommand(),
		p.explainScalingCommand(),
		p.adoptCheckCommand(),
		versionCommand(version),
	)
	return root
}

// connectWith builds the Clients from kubectl's flags (--kubeconfig, --context, -n, ...).
func connectWith(flags *genericclioptions.ConfigFlags) (*Clients, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, fmt.Errorf("namespace of the kubeconfig context: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	return &Clients{Client: c, Kube: kube, Namespace: ns}, nil
}

// Scheme holds the Flink kinds and the core ones the commands read.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(s))
	utilruntime.Must(flinkv1beta1.AddToScheme(s))
	return s
}

func versionCommand(version string) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "kubectl-flink %s\n", version)
			return err
		},
	}
}

// out is where a command prints.
func (p *plugin) out() io.Writer { return p.streams.Out }
