//go:build kube

package cli

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/hostprov/hostprov/internal/kube/agent"
	"github.com/hostprov/hostprov/internal/sdbus"
	"github.com/hostprov/hostprov/pkg/apply"
)

func newAgent() *cobra.Command {
	var f agentFlags
	c := &cobra.Command{
		Use:   "agent [--node-name NODE] [--kubeconfig FILE] [--root DIR] [--systemd-socket PATH]",
		Short: "Apply the HostHooks that select this node, and report them in its NodeHooks (Kubernetes)",
		Long: `Agent runs on every node of a Kubernetes cluster (a DaemonSet) and applies there each
HostHooks whose nodeSelector matches the node's labels, as one spec set named
hosthooks.NAME, once the rollout approved it for the node: when the node's NodeHooks
has spec.hooksHash set to the hash of the HostHooks' current hooks. Until then the
node keeps what it has. The spec sets of HostHooks that no longer select the node,
are being deleted or are gone are pruned: their units are stopped, disabled and
deleted. Every change is one apply, as hostprov apply makes it (one daemon-reload),
under the same lock; the node's own spec sets (hostprov apply -d /etc/hostprov/hooks.d)
are never touched.

After each apply it writes each NodeHooks' status: its phase (Pending, Applying,
Succeeded, Failed, Removed), the hash of the hooks applied, and per hook its phase,
exit code, reason, steps and, for a failure only, the last lines of its journal. It
follows systemd's signals for its units, so a hook that ends after the apply is
reported when it ends. It watches the API server and never polls it: an idle agent
sends nothing.

A hook whose start failed is not started again for the same hooks: a change of the
hooks runs it again, and so does a change of the HostHooks' spec.retry (hostprov
retry), once: the NodeHooks' status.retry records the retry carried out. A restarted
agent plans no changes where its predecessor applied, and runs nothing again.

A change of a hook with disruption: Drain or Reboot is made on a drained node: the
agent cordons its Node, evicts its pods (PodDisruptionBudgets hold; DaemonSet and
mirror pods stay), applies, and uncordons the Node if it was the one that cordoned
it. A drain not done within --drain-timeout applies none of those hooks, uncordons
the node, reports the pods that stayed, and is tried again later. For disruption:
Reboot it first takes the HostHooks' reboot lock (a Lease in --lease-namespace, one
node at a time), and after the apply asks systemd to reboot; after the reboot it
waits for the Node to be Ready, uncordons it and releases the lock.

It reaches the API server in the cluster as its service account, or with
--kubeconfig, and systemd over its private socket (below --root, the node's file
system mounted into its pod). The node's systemd also runs the node's own
systemd-sysusers and chpasswd for the hooks' users, groups and passwords. SIGTERM
or SIGINT ends it: an apply under way stops where it is, as hostprov apply does
(each file whole, the state true to the disk), and the next agent goes on from there.

It serves Prometheus metrics on --metrics-addr (/metrics: its applies by result,
their durations, the time of the last, the hooks found failed, Go's own) and its
probes on --health-addr: /healthz while its watches run, /readyz once its caches
have synced and it has reached systemd.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return f.run(c)
		},
	}
	f.register(c)
	return c
}

// agentFlags are the flags of hostprov agent.
type agentFlags struct {
	nodeName   string
	kubeconfig string
	root       string
	unitDir    string
	stateDir   string
	socket     string

	metricsAddr, healthAddr string
	drainTimeout            time.Duration
	watchSpread             time.Duration
	leaseNamespace          string
}

func (f *agentFlags) register(c *cobra.Command) {
	c.Flags().StringVar(&f.nodeName, "node-name", os.Getenv("NODE_NAME"), "the node this agent runs on (default $NODE_NAME)")
	c.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig `FILE` to reach the API server with (default: the in-cluster service account)")
	c.Flags().StringVar(&f.root, "root", "", "the node's root file system mounted at `DIR`: unit and state directories inside it")
	c.Flags().StringVar(&f.unitDir, "unit-dir", apply.DefaultUnitDir, "unit directory (inside --root when given)")
	c.Flags().StringVar(&f.stateDir, "state-dir", apply.DefaultStateDir, "directory of hostprov's state and lock (inside --root when given), shared with hostprov apply")
	c.Flags().StringVar(&f.socket, "systemd-socket", sdbus.PrivateSocket, "systemd's private D-Bus socket (default: inside --root when given)")
	c.Flags().StringVar(&f.metricsAddr, "metrics-addr", ":9747", "serve Prometheus metrics on `ADDR` (0 for none)")
	c.Flags().StringVar(&f.healthAddr, "health-addr", ":9748", "serve /healthz and /readyz on `ADDR` (0 for none)")
	defNamespace := os.Getenv("POD_NAMESPACE")
	if defNamespace == "" {
		defNamespace = agent.DefaultLeaseNamespace
	}
	c.Flags().StringVar(&f.leaseNamespace, "lease-namespace", defNamespace, "`NAMESPACE` of the reboot locks (default $POD_NAMESPACE, or hostprov-system)")
	c.Flags().DurationVar(&f.drainTimeout, "drain-timeout", agent.DefaultDrainTimeout, "how long a drain for a hook with a disruption may take before the agent gives up on it and tries again later")
	c.Flags().DurationVar(&f.watchSpread, "watch-spread", agent.DefaultWatchSpread, "start the watch of a new HostHooks' NodeHooks at a random moment of this window (longer in large clusters: 1ms per node), so that the agents of a fleet do not all call the API server at once; 0 starts it at once")
}

// run runs the agent until its context ends: a signal, or a watch that
// fails.
func (f *agentFlags) run(c *cobra.Command) error {
	if f.nodeName == "" {
		return invalid("no node name: give --node-name, or set NODE_NAME (a DaemonSet sets it from spec.nodeName)")
	}
	if f.watchSpread < 0 {
		return invalid("--watch-spread %s: give a duration of 0 or more, such as 10s", f.watchSpread)
	}
	if f.drainTimeout <= 0 {
		return invalid("--drain-timeout %s: give a positive duration, such as 10m", f.drainTimeout)
	}
	cfg, err := kubeConfig(f.kubeconfig)
	if err != nil {
		return failure("%v", err)
	}
	nf := nodeFlags{root: f.root, unitDir: f.unitDir, stateDir: f.stateDir, output: outputText}
	opts, err := nf.options()
	if err != nil {
		return err
	}
	// --root here is the node's file system mounted into the
	// agent's container, whose systemd it talks to through
	// --systemd-socket: not apply --root's offline image.
	opts.Offline = false
	// The node's socket is in the node's file system: under
	// --root, unless given.
	if opts.Root != "" && !c.Flags().Changed("systemd-socket") {
		f.socket = filepath.Join(opts.Root, sdbus.PrivateSocket)
	}
	log := slog.New(slog.NewTextHandler(c.ErrOrStderr(), nil))
	// client-go and controller-runtime log through klog and
	// logr: to the same place, in the same form.
	klog.SetSlogLogger(log)
	ctrllog.SetLogger(logr.FromSlogHandler(log.Handler()))
	a, err := agent.New(agent.Config{NodeName: f.nodeName, REST: cfg, Options: opts, SystemdSocket: f.socket, Log: log,
		DrainTimeout: f.drainTimeout, LeaseNamespace: f.leaseNamespace, WatchSpread: f.watchSpread})
	if err != nil {
		return invalid("%v", err)
	}
	ctx, stop := signalContext(c)
	defer stop()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return a.Serve(gctx, f.metricsAddr, f.healthAddr) })
	g.Go(func() error { return a.Run(gctx) })
	if err := g.Wait(); err != nil {
		return failure("%v", err)
	}
	var i interrupt
	if errors.As(context.Cause(ctx), &i) {
		log.Info("stopped", "signal", i.sig.String())
	}
	return nil
}

// kubeConfig is the API server configuration of a kubeconfig file, or the
// in-cluster one without.
func kubeConfig(file string) (*rest.Config, error) {
	if file == "" {
		return rest.InClusterConfig()
	}
	return clientcmd.BuildConfigFromFlags("", file)
}
