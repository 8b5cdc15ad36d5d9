package cli

import (
	"log/slog"
	"os"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/hostprov/hostprov/internal/kube/controller"
)

// serviceAccountNamespace is where a pod finds its own namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// defaultNamespace is the controller's namespace when neither the flag nor
// the pod says: the one deploy/ installs it in.
const defaultNamespace = "hostprov-system"

func newController() *cobra.Command {
	var (
		kubeconfig, namespace   string
		leaderElect             bool
		metricsAddr, healthAddr string
	)
	c := &cobra.Command{
		Use:   "controller",
		Short: "Roll HostHooks out to the nodes and sum up their NodeHooks (in the cluster, as a Deployment)",
		Long: `controller runs hostprov's controller on Kubernetes. For every HostHooks it keeps a
NodeHooks for each node the node selector matches, approves nodes for the current hooks
as spec.rollout allows (maxUnavailable, pause, failureThreshold), sums the NodeHooks up
into the HostHooks status, and holds a deleted HostHooks until the agents removed its
units from the nodes.

Run several replicas: they elect a leader with a Lease named ` + controller.LeaseName + ` in
--namespace, and only the leader acts. It runs until SIGTERM or SIGINT, and fails when it
loses the lease, so that its pod restarts as a candidate.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			log := logr.FromSlogHandler(slog.NewTextHandler(c.ErrOrStderr(), nil))
			ctrl.SetLogger(log)
			klog.SetLogger(log)

			cfg, err := restConfig(kubeconfig)
			if err != nil {
				return failure("controller: the cluster's configuration: %v", err)
			}
			if namespace == "" {
				namespace = podNamespace()
			}
			mgr, err := controller.NewManager(cfg, controller.Options{
				Namespace:      namespace,
				LeaderElection: leaderElect,
				MetricsAddr:    metricsAddr,
				HealthAddr:     healthAddr,
				Logger:         log,
			})
			if err != nil {
				return failure("controller: %v", err)
			}
			ctx, stop := signalContext(c)
			defer stop()
			// A signal is the end of a controller's work, not a
			// failure; losing the lease while running is one.
			if err := mgr.Start(ctx); err != nil && ctx.Err() == nil {
				return failure("controller: %v", err)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "the cluster's kubeconfig `FILE` (default: $KUBECONFIG, ~/.kube/config, or the pod's service account)")
	f.StringVar(&namespace, "namespace", "", "the `NAMESPACE` of the leader election lease (default: the pod's, or "+defaultNamespace+")")
	f.BoolVar(&leaderElect, "leader-elect", true, "act only while holding the lease, so that replicas can stand by")
	f.StringVar(&metricsAddr, "metrics-addr", ":8080", "serve Prometheus metrics on `ADDR` (0 for none)")
	f.StringVar(&healthAddr, "health-addr", ":8081", "serve /healthz and /readyz on `ADDR` (0 for none)")
	return c
}

// restConfig is the client configuration of kubeconfig, or, when it is
// empty, of $KUBECONFIG or ~/.kube/config, or of the pod's service account
// when there is none of those.
func restConfig(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, err
	}
	// The field manager of the controller's writes, and its name in the
	// API server's logs and audit.
	cfg.UserAgent = controller.Name
	return cfg, nil
}

// podNamespace is the namespace of the pod the controller runs in, or
// defaultNamespace outside one.
func podNamespace() string {
	if b, err := os.ReadFile(serviceAccountNamespace); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return defaultNamespace
}
