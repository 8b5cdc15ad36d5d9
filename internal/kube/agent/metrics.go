package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"
)

// Metrics are an agent's Prometheus metrics, in a registry of their own
// (not the process's default one, which libraries register into): the
// applies, their results and durations, the hooks that failed, and Go's
// and the process's own.
type Metrics struct {
	registry     *prometheus.Registry
	applies      *prometheus.CounterVec
	hookFailures *prometheus.CounterVec
	duration     prometheus.Histogram
	lastApply    prometheus.Gauge
}

// Results of an apply, the values of the label result.
const (
	resultSucceeded = "succeeded"
	resultFailed    = "failed"
)

// NewMetrics makes an agent's metrics, each at zero.
func NewMetrics() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		applies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hostprov_agent_applies_total",
			Help: "Applies of the HostHooks' spec sets on the node, by result: failed when a set could not be applied or removed, or a hook it started failed.",
		}, []string{"result"}),
		hookFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hostprov_agent_hook_failures_total",
			Help: "Hooks found failed (a hook with a failed step included), by HostHooks: at the apply that started them, or later, when systemd signals it.",
		}, []string{"hosthooks"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "hostprov_agent_apply_duration_seconds",
			Help: "How long an apply took, from taking the lock to the report of the units after it.",
			// 50ms to about 7 minutes: a plan that changes little to
			// hooks whose starts take minutes.
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 14),
		}),
		lastApply: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hostprov_agent_last_apply_timestamp_seconds",
			Help: "When the last apply ended, in seconds since the epoch; 0 before the first.",
		}),
	}
	// Both results from the start, so that a rate over them is defined
	// before the first failure.
	m.applies.WithLabelValues(resultSucceeded)
	m.applies.WithLabelValues(resultFailed)
	m.registry.MustRegister(m.applies, m.hookFailures, m.duration, m.lastApply,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// applied records an apply that started at start and ended at end.
func (m *Metrics) applied(start, end time.Time, failed bool) {
	if m == nil {
		return
	}
	result := resultSucceeded
	if failed {
		result = resultFailed
	}
	m.applies.WithLabelValues(result).Inc()
	m.duration.Observe(end.Sub(start).Seconds())
	m.lastApply.Set(float64(end.UnixNano()) / 1e9)
}

// hooksFailed records n hooks of the HostHooks named hh found failed.
func (m *Metrics) hooksFailed(hh string, n int) {
	if m == nil || n == 0 {
		return
	}
	m.hookFailures.WithLabelValues(hh).Add(float64(n))
}

// health is what the agent's probes answer: alive while its watches run,
// ready once they synced and systemd answered once.
type health struct {
	// synced is set once the agent's caches have synced; reached once
	// it connected to systemd.
	synced, reached atomic.Bool
	// watchesEnded is set when the cache's informers stopped while the
	// agent still runs: it sees no more changes, and must be restarted.
	watchesEnded atomic.Bool
}

// Health serves /healthz (liveness: the agent's watches still run) and
// /readyz (readiness: its caches synced and it reached systemd at least
// once), each 200 with "ok", or 503 with the reason.
func (a *Agent) Health() http.Handler {
	mux := http.NewServeMux()
	answer := func(w http.ResponseWriter, problem string) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if problem != "" {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(problem + "\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if a.health.watchesEnded.Load() {
			answer(w, "the watches of the API server ended")
			return
		}
		answer(w, "")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		switch {
		case a.health.watchesEnded.Load():
			answer(w, "the watches of the API server ended")
		case !a.health.synced.Load():
			answer(w, "the caches have not synced yet")
		case !a.health.reached.Load():
			answer(w, "systemd has not been reached yet")
		default:
			answer(w, "")
		}
	})
	return mux
}

// Serve serves the agent's metrics (/metrics) on metricsAddr and its
// probes (/healthz, /readyz) on healthAddr, both on one port when they are
// the same, and neither where the address is "" or "0", until ctx ends.
// It returns an error when it cannot listen or serve.
func (a *Agent) Serve(ctx context.Context, metricsAddr, healthAddr string) error {
	muxes := map[string]*http.ServeMux{}
	mux := func(addr string) *http.ServeMux {
		if muxes[addr] == nil {
			muxes[addr] = http.NewServeMux()
		}
		return muxes[addr]
	}
	if metricsAddr != "" && metricsAddr != "0" {
		mux(metricsAddr).Handle("/metrics", a.cfg.Metrics.Handler())
	}
	if healthAddr != "" && healthAddr != "0" {
		h := a.Health()
		mux(healthAddr).Handle("/healthz", h)
		mux(healthAddr).Handle("/readyz", h)
	}
	var lc net.ListenConfig
	ls := map[string]net.Listener{}
	for addr := range muxes {
		l, err := lc.Listen(ctx, "tcp", addr)
		if err != nil {
			for _, l := range ls {
				l.Close()
			}
			return fmt.Errorf("agent: %w", err)
		}
		ls[addr] = l
	}
	g, gctx := errgroup.WithContext(ctx)
	for addr, l := range ls {
		srv := &http.Server{Handler: muxes[addr], ReadHeaderTimeout: 10 * time.Second}
		g.Go(func() error {
			if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("agent: serving on %s: %w", addr, err)
			}
			return nil
		})
		g.Go(func() error {
			<-gctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return srv.Shutdown(sctx)
		})
	}
	return g.Wait()
}
