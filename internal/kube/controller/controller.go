package controller

import (
	"errors"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// Name is the controller's name: in its logs and metrics, and the field
// manager of what it writes.
const Name = "hostprov-controller"

// LeaseName is the Lease that the controllers of a cluster elect their
// leader with.
const LeaseName = "hostprov-controller"

// Options configure NewManager.
type Options struct {
	// Namespace holds the leader election Lease.
	Namespace string
	// LeaderElection makes the manager act only while it holds the Lease.
	LeaderElection bool
	// LeaseDuration, RenewDeadline and RetryPeriod tune the election;
	// zero is controller-runtime's default (15s, 10s, 2s).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// MetricsAddr and HealthAddr are where the metrics and the health
	// probes (/healthz, /readyz) are served; "" or "0" serves none.
	MetricsAddr, HealthAddr string
	// StatusInterval is the least time between two status writes of a
	// HostHooks (see Reconciler); zero is DefaultStatusInterval.
	StatusInterval time.Duration
	// Logger receives the manager's logs.
	Logger logr.Logger
}

// Scheme is the scheme of the controller's client: Kubernetes' own types
// and hostprov.dev's.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// NewManager is a manager that runs the controller against the cluster of
// cfg, with leader election as opts says; a cfg with no QPS set gets no
// client-side rate limit. Start runs it: it returns when its context ends
// or when it loses the lease, after which the process must end, since
// another controller acts by then.
func NewManager(cfg *rest.Config, opts Options) (manager.Manager, error) {
	s, err := Scheme()
	if err != nil {
		return nil, err
	}
	addr := func(a string) string {
		if a == "" {
			return "0"
		}
		return a
	}
	mo := manager.Options{
		Scheme:                        s,
		Logger:                        opts.Logger,
		LeaderElection:                opts.LeaderElection,
		LeaderElectionID:              LeaseName,
		LeaderElectionNamespace:       opts.Namespace,
		LeaderElectionResourceLock:    "leases",
		LeaderElectionReleaseOnCancel: true,
		Metrics:                       metricsserver.Options{BindAddress: addr(opts.MetricsAddr)},
		HealthProbeBindAddress:        addr(opts.HealthAddr),
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Node{}: {Transform: nodeReadiness},
		}},
		Controller: config.Controller{
			// One process may run several managers (the tests of the
			// election do), each with its one controller of this name.
			SkipNameValidation: new(true),
		},
	}
	if opts.LeaseDuration > 0 {
		mo.LeaseDuration = &opts.LeaseDuration
	}
	if opts.RenewDeadline > 0 {
		mo.RenewDeadline = &opts.RenewDeadline
	}
	if opts.RetryPeriod > 0 {
		mo.RetryPeriod = &opts.RetryPeriod
	}
	if opts.LeaderElection && opts.Namespace == "" {
		return nil, errors.New("leader election needs the namespace of its lease")
	}
	if cfg.QPS == 0 {
		// client-go's default of 5 requests a second would take minutes
		// to create the NodeHooks of 1,000 nodes; the API server's
		// priority and fairness limits the controller instead, as
		// controller-runtime's own configuration does.
		cfg = rest.CopyConfig(cfg)
		cfg.QPS = -1
	}
	mgr, err := ctrl.NewManager(cfg, mo)
	if err != nil {
		return nil, err
	}
	if opts.HealthAddr != "" && opts.HealthAddr != "0" {
		if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
			return nil, err
		}
		if err := mgr.AddReadyzCheck("cache", func(req *http.Request) error {
			if !mgr.GetCache().WaitForCacheSync(req.Context()) {
				return errors.New("the cache is not synced")
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	r := &Reconciler{Client: mgr.GetClient(), StatusInterval: opts.StatusInterval, Recorder: mgr.GetEventRecorder(Name)}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	return mgr, nil
}
