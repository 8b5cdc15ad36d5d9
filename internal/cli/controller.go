//go:build kube

package cli

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/internal/kube/admission"
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
		webhook                 webhookFlags
	)
	c := &cobra.Command{
		Use:   "controller",
		Short: "Roll HostHooks out to the nodes and sum up their NodeHooks (in the cluster, as a Deployment)",
		Long: `controller runs hostprov's controller on Kubernetes. For every HostHooks it keeps a
NodeHooks for each node the node selector matches, approves nodes for the current hooks
as spec.rollout allows (maxUnavailable, pause, failureThreshold), and nodes that left the
selector to remove them, within one budget that every HostHooks over the same nodes
shares; it sums the NodeHooks up into the HostHooks status, and holds a deleted HostHooks
until the agents removed its units from the nodes.

Run several replicas: they elect a leader with a Lease named ` + controller.LeaseName + ` in
--namespace, and only the leader acts. It runs until SIGTERM or SIGINT, and fails when it
loses the lease, so that its pod restarts as a candidate.

Every replica, leader or not, serves the admission webhook that refuses an invalid
HostHooks with hostprov's own messages (--webhook-addr): its serving certificate is in
the Secret --webhook-secret, made by the first replica that finds none, and its CA is
set in the ValidatingWebhookConfiguration --webhook-config.`,
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
			g, gctx := errgroup.WithContext(ctx)
			if webhook.addr != "" && webhook.addr != "0" {
				cert, err := webhook.certificate(ctx, cfg, namespace)
				if err != nil {
					return failure("controller: the webhook's certificate: %v", err)
				}
				mux := http.NewServeMux()
				mux.Handle(admission.Path, admission.NewHandler(log))
				g.Go(func() error {
					if err := admission.Serve(gctx, webhook.addr, cert, mux); err != nil {
						return fmt.Errorf("the webhook on %s: %w", webhook.addr, err)
					}
					return nil
				})
			}
			g.Go(func() error { return mgr.Start(gctx) })
			// A signal is the end of a controller's work, not a
			// failure; losing the lease while running is one, and so is
			// a webhook that cannot serve.
			if err := g.Wait(); err != nil && ctx.Err() == nil {
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
	f.StringVar(&webhook.addr, "webhook-addr", ":9443", "serve the HostHooks admission webhook over HTTPS on `ADDR` (0 for none)")
	f.StringVar(&webhook.secret, "webhook-secret", "hostprov-webhook-cert", "the `SECRET` in --namespace that holds the webhook's certificate")
	f.StringVar(&webhook.service, "webhook-service", "hostprov-controller", "the `SERVICE` in --namespace that the API server calls the webhook through (the certificate's name)")
	f.StringVar(&webhook.config, "webhook-config", "hostprov-hosthooks", "the ValidatingWebhookConfiguration `NAME` whose CA bundle is the certificate's")
	return c
}

// webhookFlags say where the admission webhook serves and where its
// certificate lives.
type webhookFlags struct {
	addr, secret, service, config string
}

// certificate is the webhook's serving certificate, from its Secret (made
// when missing), with the webhook configuration's CA bundle set to it.
func (w webhookFlags) certificate(ctx context.Context, cfg *rest.Config, namespace string) (tls.Certificate, error) {
	cl, err := client.New(cfg, client.Options{})
	if err != nil {
		return tls.Certificate{}, err
	}
	return admission.EnsureCertificate(ctx, cl, namespace, w.secret, w.service, w.config)
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
