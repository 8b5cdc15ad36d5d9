package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr"

	"github.com/hostprov/hostprov/internal/kube/agent"
	"github.com/hostprov/hostprov/internal/kube/controller"
	"github.com/hostprov/hostprov/internal/kubetest"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/apply/applytest"
)

// BenchmarkFleet is hostprov on Kubernetes at fleet scale: the controller
// and HOSTPROV_FLEET_NODES (default 1,000) agents, each with applytest's
// fake systemd and its own watches and client, in this process, against a
// real API server and etcd. Each op is one change of a HostHooks that
// selects every node (maxUnavailable: 100%), timed until its status says
// Complete for the new hooks. It reports:
//
//   - s/change: from the change to the aggregated Complete status;
//   - req/node/change: API requests (every verb but WATCH) during a change,
//     per node, as the API server counts them (apiserver_request_total);
//   - idle-req/s: the API server's request rate with the fleet at rest,
//     and idle-req/node/min the same per node and minute: no polling
//     means zero beyond the watches;
//   - watches/node: watches the API server holds per node.
//
// Run it with make bench-fleet.
func BenchmarkFleet(b *testing.B) {
	n := 1000
	if s := os.Getenv("HOSTPROV_FLEET_NODES"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			b.Fatalf("HOSTPROV_FLEET_NODES=%q: want a number of nodes", s)
		}
		n = v
	}
	c := kubetest.Start(b)
	c.InstallCRDs(b, "../../../deploy/crds")
	cl := c.Client(b)
	ctx := b.Context()

	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("node-%04d", i)
	}
	parallel(b, names, func(name string) error {
		return cl.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"fleet": "bench"}}})
	})

	mgr, err := controller.NewManager(c.Config(), controller.Options{Logger: logr.Discard()})
	if err != nil {
		b.Fatal(err)
	}
	runBench(b, mgr.Start)

	// One HTTP client for every agent: HTTP/2 carries their requests
	// and watches over few connections, as a real node's agent has its
	// own; what the API server counts is the same.
	acfg := rest.CopyConfig(c.Config())
	hc, err := rest.HTTPClientFor(acfg)
	if err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	agents := make([]*agent.Agent, n)
	for i, name := range names {
		opts := apply.Options{Root: b.TempDir()}
		if err := apply.PrepareDirs(opts); err != nil {
			b.Fatal(err)
		}
		sd := &agent.Systemd{Systemd: applytest.New()}
		a, err := agent.New(agent.Config{NodeName: name, REST: acfg, HTTPClient: hc, Options: opts, Log: quiet,
			Connect: func(context.Context) (*agent.Systemd, error) { return sd, nil }})
		if err != nil {
			b.Fatal(err)
		}
		agents[i] = a
		runBench(b, a.Run)
	}

	done := watchComplete(b, c.Config(), cl)
	hh := &v1alpha1.HostHooks{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet"},
		Spec: v1alpha1.HostHooksSpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": "bench"}},
			Rollout:      v1alpha1.Rollout{MaxUnavailable: new(intstr.FromString("100%"))},
			Hooks:        benchHooks(0),
		},
	}
	start := time.Now()
	if err := cl.Create(ctx, hh); err != nil {
		b.Fatal(err)
	}
	done.wait(b, v1alpha1.HooksHash(hh.Spec.Hooks), n)
	b.Logf("%d nodes: first rollout complete in %v", n, time.Since(start).Round(time.Millisecond))

	var reqs float64
	var elapsed time.Duration
	b.ResetTimer()
	for i := range b.N {
		before := scrape(b, c)
		start := time.Now()
		if err := cl.Get(ctx, client.ObjectKeyFromObject(hh), hh); err != nil {
			b.Fatal(err)
		}
		hh.Spec.Hooks = benchHooks(i + 1)
		if err := cl.Update(ctx, hh); err != nil {
			b.Fatal(err)
		}
		done.wait(b, v1alpha1.HooksHash(hh.Spec.Hooks), n)
		elapsed += time.Since(start)
		after := scrape(b, c)
		reqs += after.requests - before.requests
		if i == 0 {
			// Printed, not logged: a benchmark's log is cut to a few
			// lines.
			fmt.Fprintf(os.Stderr, "requests of one change, by verb and resource:\n%s", after.minus(before))
		}
	}
	b.StopTimer()
	// At rest: the fleet is complete and nothing changes.
	time.Sleep(2 * time.Second)
	idle := 10 * time.Second
	before := scrape(b, c)
	time.Sleep(idle)
	after := scrape(b, c)
	rate := (after.requests - before.requests) / idle.Seconds()
	fmt.Fprintf(os.Stderr, "requests at rest, by verb and resource, over %v:\n%s", idle, after.minus(before))

	var syncs, writes int64
	for _, a := range agents {
		st := a.Stats()
		syncs += st.Syncs
		writes += st.StatusWrites
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(elapsed.Seconds()/float64(b.N), "s/change")
	b.ReportMetric(reqs/float64(b.N)/float64(n), "req/node/change")
	b.ReportMetric(rate, "idle-req/s")
	b.ReportMetric(rate*60/float64(n), "idle-req/node/min")
	b.ReportMetric(after.watches/float64(n), "watches/node")
	b.ReportMetric(float64(ms.HeapInuse)/float64(n)/1024, "heap-KiB/agent")
	b.Logf("%d nodes: %d applies, %d status writes in all", n, syncs, writes)
}

// benchHooks are the hooks of the benchmark's version v: one service.
func benchHooks(v int) []v1alpha1.Hook {
	return []v1alpha1.Hook{{Name: "node-exporter", Description: fmt.Sprintf("version %d", v),
		Exec: []string{"/usr/bin/node_exporter", fmt.Sprintf("--web.listen-address=:%d", 9100+v%100)}}}
}

// parallel runs f for each name, 32 at a time.
func parallel(b *testing.B, names []string, f func(string) error) {
	b.Helper()
	var g errgroup.Group
	g.SetLimit(32)
	for _, name := range names {
		g.Go(func() error { return f(name) })
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
}

// runBench runs f until the benchmark ends.
func runBench(b *testing.B, f func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	})
}

// completeWatch tells, from a watch of the HostHooks (so that waiting for
// it adds no requests to what is measured), when its status is Complete
// for given hooks.
type completeWatch struct {
	mu   sync.Mutex
	cond *sync.Cond
	last v1alpha1.HostHooksStatus
	gen  int64
}

func watchComplete(b *testing.B, cfg *rest.Config, cl client.Client) *completeWatch {
	b.Helper()
	ca, err := cache.New(cfg, cache.Options{Scheme: cl.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	inf, err := ca.GetInformer(b.Context(), &v1alpha1.HostHooks{})
	if err != nil {
		b.Fatal(err)
	}
	w := &completeWatch{}
	w.cond = sync.NewCond(&w.mu)
	see := func(obj any) {
		if hh, ok := obj.(*v1alpha1.HostHooks); ok {
			w.mu.Lock()
			w.last, w.gen = hh.Status, hh.Generation
			w.cond.Broadcast()
			w.mu.Unlock()
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: see, UpdateFunc: func(_, o any) { see(o) }}); err != nil {
		b.Fatal(err)
	}
	runBench(b, ca.Start)
	if !ca.WaitForCacheSync(b.Context()) {
		b.Fatal("the HostHooks watch did not sync")
	}
	return w
}

func (w *completeWatch) wait(b *testing.B, hash string, n int) {
	b.Helper()
	timeout := time.AfterFunc(10*time.Minute, func() {
		w.mu.Lock()
		w.gen = -1
		w.cond.Broadcast()
		w.mu.Unlock()
	})
	defer timeout.Stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for !(w.last.HooksHash == hash && w.last.ObservedGeneration == w.gen && w.last.Phase == v1alpha1.PhaseComplete &&
		int(w.last.SucceededNodes) == n) {
		if w.gen == -1 {
			b.Fatalf("not complete within 10 minutes: %+v", w.last)
		}
		w.cond.Wait()
	}
}

// metrics are the API server's request counters.
type metrics struct {
	requests float64            // every verb but WATCH
	watches  float64            // watches being served
	byKey    map[string]float64 // by "VERB resource[/subresource]"
}

// scrape reads the API server's /metrics.
func scrape(b *testing.B, c *kubetest.Cluster) metrics {
	b.Helper()
	hc, err := rest.HTTPClientFor(c.Config())
	if err != nil {
		b.Fatal(err)
	}
	resp, err := hc.Get(c.Config().Host + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("/metrics: %s %v", resp.Status, err)
	}
	m := metrics{byKey: map[string]float64{}}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "apiserver_request_total{"):
			ls, v := sample(line)
			// WATCH is counted as it starts; a request of no resource
			// is the benchmark's own scrape of /metrics.
			if ls["verb"] == "WATCH" || ls["resource"] == "" {
				continue
			}
			m.requests += v
			key := ls["verb"] + " " + ls["resource"]
			if ls["subresource"] != "" {
				key += "/" + ls["subresource"]
			}
			m.byKey[key] += v
		case strings.HasPrefix(line, "apiserver_longrunning_requests{"):
			if ls, v := sample(line); ls["verb"] == "WATCH" {
				m.watches += v
			}
		}
	}
	return m
}

// sample parses one sample line of the Prometheus text format.
func sample(line string) (map[string]string, float64) {
	ls := map[string]string{}
	open, end := strings.IndexByte(line, '{'), strings.LastIndexByte(line, '}')
	for _, kv := range strings.Split(line[open+1:end], ",") {
		k, v, _ := strings.Cut(kv, "=")
		ls[k] = strings.Trim(v, `"`)
	}
	v, _ := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
	return ls, v
}

// minus lists the requests of m since before, most first.
func (m metrics) minus(before metrics) string {
	type kv struct {
		k string
		v float64
	}
	var d []kv
	for k, v := range m.byKey {
		if dv := v - before.byKey[k]; dv > 0 {
			d = append(d, kv{k, dv})
		}
	}
	sort.Slice(d, func(i, j int) bool { return d[i].v > d[j].v || d[i].v == d[j].v && d[i].k < d[j].k })
	var sb strings.Builder
	for _, e := range d {
		fmt.Fprintf(&sb, "  %8.0f %s\n", e.v, e.k)
	}
	return sb.String()
}
