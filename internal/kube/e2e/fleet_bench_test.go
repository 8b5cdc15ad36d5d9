package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/internal/deploytest"
	"github.com/hostprov/hostprov/internal/kube/agent"
	"github.com/hostprov/hostprov/internal/kubetest"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/apply/applytest"
)

// What deploy/ names, and the benchmark's author of HostHooks.
const (
	fleetNS        = "hostprov-system"
	agentSA        = "hostprov-agent"
	controllerSA   = "hostprov-controller"
	webhookConfig  = "hostprov-hosthooks"
	webhookService = "hostprov-controller"
	webhookSecret  = "hostprov-webhook-cert"
	authorRole     = "hostprov-hosthooks-author"
	author         = "fleet-author"
)

// BenchmarkFleet is hostprov on Kubernetes at fleet scale, on the API path
// of production: a real API server and etcd with what `kubectl apply -k
// deploy/` installs (CRDs, namespace, service accounts, RBAC, the
// ValidatingAdmissionPolicies and the HostHooks webhook), the controller
// (the hostprov binary, in a process of its own as in its pod) with its
// service account's token, leader election and its webhook server, and
// HOSTPROV_FLEET_NODES agents (a comma-separated list of fleet sizes, one
// sub-benchmark each; default 1,000), each with applytest's fake systemd,
// its own watches and client, and its own service-account token bound to
// a Pod on its Node, so that the agent policy holds it to its node. The
// agents run in this process, at a lower CPU priority than the control
// plane (they would run on nodes of their own); only the kubelets, the
// scheduler and the controller manager are missing (their Pods stay
// Pending).
//
// Each op is one change of a HostHooks that selects every node
// (maxUnavailable: 100%), made by a user with the author role (through
// RBAC and the webhook), timed until its status says Complete for the new
// hooks. It reports:
//
//   - s/change: from the change to the aggregated Complete status;
//   - req/node/change: API requests (every verb but WATCH) during a change,
//     per node, as the API server counts them (apiserver_request_total);
//   - webhook/change: the API server's calls of the webhook per change;
//   - policy-denials: requests the admission policies refused while
//     measuring (0: every agent writes only its own node's NodeHooks);
//   - lease-renewals: the controller's renewals of its Lease while
//     measuring, and lease-transitions its changes of holder (0);
//   - idle-req/s: the API server's request rate with the fleet at rest,
//     and idle-req/node/min the same per node and minute: no polling
//     means zero beyond the watches;
//   - watches/node: watches the API server holds per node;
//   - the machine: cpus, load1-before and load1-after (the 1-minute load
//     average before the cluster starts and after the idle measurement:
//     the machine is shared), and peak-RSS-MiB of this process (the
//     agents), of the controller (hostprov-kube), of kube-apiserver and
//     of etcd.
//
// Run it with make bench-fleet.
func BenchmarkFleet(b *testing.B) {
	sizes := []int{1000}
	if s := os.Getenv("HOSTPROV_FLEET_NODES"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			v, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || v < 2 {
				b.Fatalf("HOSTPROV_FLEET_NODES=%q: want numbers of nodes (at least 2), separated by commas, such as 1000,10000", s)
			}
			sizes = append(sizes, v)
		}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) { benchFleet(b, n) })
	}
}

func benchFleet(b *testing.B, n int) {
	load1Before, loadBefore := loadavg(b)
	resetPeakRSS()
	c := kubetest.Start(b)
	cl := c.Client(b)
	addr := install(b, c)
	names := makeNodes(b, cl, n)
	// Every agent's token, and the controller's (its pod on the first
	// node): minted as the kubelet mints them, bound to a Pod.
	tokens := podTokens(b, c, agentSA, names)
	ctrlToken := podTokens(b, c, controllerSA, names[:1])[names[0]]
	done, lease := watchFleet(b, c.Config(), cl)
	startController(b, c, ctrlToken, addr).whenExited(b, done.fail)
	authorCfg := rest.CopyConfig(c.Config())
	authorCfg.Impersonate = rest.ImpersonationConfig{UserName: author}
	authorClient, err := client.New(authorCfg, client.Options{Scheme: kubetest.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	// The API server takes up a new webhook configuration a moment after
	// it is stored, and the controller sets its CA: wait until it refuses
	// what it refuses (a dry run, which admission sees and nothing
	// stores).
	waitRefused(b, `admission webhook "hosthooks.hostprov.dev" denied`, func() error {
		return authorClient.Create(b.Context(), &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "probe"},
			Spec: v1alpha1.HostHooksSpec{Hooks: []v1alpha1.Hook{{Name: "probe"}}}}, client.DryRunAll)
	})
	agentCfgs := agentConfigs(b, c, names, tokens)
	waitAgentPolicy(b, cl, agentCfgs[0], names[1])

	// From here on this process is the fleet, and the fleet yields to
	// the control plane it loads, as it would from nodes of its own.
	lowerPriority(b)
	agents := startAgents(b, names, agentCfgs)
	b.Logf("%d nodes: the agents are ready", n)

	hh := firstRollout(b, authorClient, done, lease, n)
	first := scrape(b, c)
	renewals, transitions := lease.counts()
	b.ResetTimer()
	m := measureChanges(b, c, authorClient, hh, done, n)
	b.StopTimer()
	// At rest: the fleet is complete and nothing changes.
	time.Sleep(2 * time.Second)
	idle := 10 * time.Second
	before := scrape(b, c)
	time.Sleep(idle)
	after := scrape(b, c)
	rate := (after.requests - before.requests) / idle.Seconds()
	fmt.Fprintf(os.Stderr, "%d nodes: requests at rest, by verb, resource and code, over %v:\n%s", n, idle, after.minus(before))
	renewals2, transitions2 := lease.counts()
	load1After, loadAfter := loadavg(b)

	b.ReportMetric(m.elapsed.Seconds()/float64(b.N), "s/change")
	b.ReportMetric(m.requests/float64(b.N)/float64(n), "req/node/change")
	b.ReportMetric(m.webhookCalls/float64(b.N), "webhook/change")
	b.ReportMetric(after.denials-first.denials, "policy-denials")
	b.ReportMetric(float64(renewals2-renewals), "lease-renewals")
	b.ReportMetric(float64(transitions2-transitions), "lease-transitions")
	b.ReportMetric(rate, "idle-req/s")
	b.ReportMetric(rate*60/float64(n), "idle-req/node/min")
	b.ReportMetric(after.watches/float64(n), "watches/node")
	reportProcess(b, agents, n)
	b.ReportMetric(load1Before, "load1-before")
	b.ReportMetric(load1After, "load1-after")
	var syncs, writes int64
	for _, a := range agents {
		st := a.Stats()
		syncs += st.Syncs
		writes += st.StatusWrites
	}
	b.Logf("%d nodes: %d applies, %d status writes in all; %v of measuring, %.0f webhook calls in all, %.0f policy denials in all (the probes'), %.0f policy errors; loadavg %s before, %s after, %d CPUs",
		n, syncs, writes, m.elapsed.Round(time.Millisecond), after.webhookCalls, after.denials, after.policyEr, loadBefore, loadAfter, runtime.NumCPU())
}

// makeNodes makes n Nodes, labelled for the benchmark's HostHooks, and
// returns their names.
func makeNodes(b *testing.B, cl client.Client, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("node-%05d", i)
	}
	parallel(b, names, func(name string) error {
		return cl.Create(b.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"fleet": "bench"}}})
	})
	return names
}

// waitAgentPolicy waits until the agent policy refuses the agent of cfg a
// write of another node's NodeHooks (a dry run): the API server takes up
// a new policy a moment after it is stored.
func waitAgentPolicy(b *testing.B, cl client.Client, cfg agentConfig, otherNode string) {
	ctx := b.Context()
	probe := &v1alpha1.NodeHooks{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.NodeHooksName("probe", otherNode)},
		Spec: v1alpha1.NodeHooksSpec{NodeName: otherNode, HostHooks: "probe"}}
	if err := cl.Create(ctx, probe); err != nil {
		b.Fatal(err)
	}
	agent0, err := client.New(cfg.rest, client.Options{Scheme: kubetest.Scheme, HTTPClient: cfg.http})
	if err != nil {
		b.Fatal(err)
	}
	waitRefused(b, "hostprov-agent-own-node", func() error {
		probe.Status.Message = "probe"
		return agent0.Status().Update(ctx, probe, client.DryRunAll)
	})
	if err := client.IgnoreNotFound(cl.Delete(ctx, probe)); err != nil {
		b.Fatal(err)
	}
}

// startAgents starts an agent for each node, in waves, each once the one
// before is ready (its caches synced), as a DaemonSet's pods come up over
// minutes, not in one instant: 10,000 agents listing and watching at once
// kept a 2-core API server from accepting connections.
func startAgents(b *testing.B, names []string, cfgs []agentConfig) []*agent.Agent {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	agents := make([]*agent.Agent, len(names))
	const wave = 500
	for lo := 0; lo < len(names); lo += wave {
		hi := min(lo+wave, len(names))
		for i := lo; i < hi; i++ {
			opts := apply.Options{Root: b.TempDir()}
			if err := apply.PrepareDirs(opts); err != nil {
				b.Fatal(err)
			}
			sd := &agent.Systemd{Systemd: applytest.New()}
			// The agent command's spread of watch starts, as in
			// production: the first rollout of a new HostHooks waits for
			// it, and its time says so.
			a, err := agent.New(agent.Config{NodeName: names[i], REST: cfgs[i].rest, HTTPClient: cfgs[i].http, Options: opts, Log: quiet,
				WatchSpread: agent.DefaultWatchSpread,
				Connect:     func(context.Context) (*agent.Systemd, error) { return sd, nil }})
			if err != nil {
				b.Fatal(err)
			}
			agents[i] = a
			runBench(b, a.Run)
		}
		waitReady(b, agents[lo:hi])
	}
	return agents
}

// firstRollout makes the benchmark's HostHooks, which selects every node,
// and waits for its first rollout (the NodeHooks made, every agent's
// watch of its own started), printing the fleet's progress meanwhile.
func firstRollout(b *testing.B, authorClient client.Client, done *completeWatch, lease *leaseWatch, n int) *v1alpha1.HostHooks {
	hh := &v1alpha1.HostHooks{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet"},
		Spec: v1alpha1.HostHooksSpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": "bench"}},
			Rollout:      v1alpha1.Rollout{MaxUnavailable: new(intstr.FromString("100%"))},
			Hooks:        benchHooks(0),
		},
	}
	start := time.Now()
	b.Logf("%d nodes: the HostHooks made at %s", n, start.Format("15:04:05.000"))
	runBench(b, func(ctx context.Context) error { monitor(ctx, start, done, lease, 10*time.Second); return nil })
	if err := authorClient.Create(b.Context(), hh); err != nil {
		b.Fatal(err)
	}
	done.wait(b, v1alpha1.HooksHash(hh.Spec.Hooks), n)
	b.Logf("%d nodes: first rollout complete in %v", n, time.Since(start).Round(time.Millisecond))
	return hh
}

// changes is what b.N changes of the hooks took.
type changes struct {
	elapsed      time.Duration
	requests     float64 // the API server's, every verb but WATCH
	webhookCalls float64 // the API server's calls of the webhook
}

// measureChanges changes the hooks of hh b.N times, each once the one
// before is complete on every node.
func measureChanges(b *testing.B, c *kubetest.Cluster, authorClient client.Client, hh *v1alpha1.HostHooks, done *completeWatch, n int) changes {
	var m changes
	for i := range b.N {
		before := scrape(b, c)
		start := time.Now()
		if err := authorClient.Get(b.Context(), client.ObjectKeyFromObject(hh), hh); err != nil {
			b.Fatal(err)
		}
		hh.Spec.Hooks = benchHooks(i + 1)
		if err := authorClient.Update(b.Context(), hh); err != nil {
			b.Fatal(err)
		}
		done.wait(b, v1alpha1.HooksHash(hh.Spec.Hooks), n)
		m.elapsed += time.Since(start)
		after := scrape(b, c)
		m.requests += after.requests - before.requests
		m.webhookCalls += after.webhookCalls - before.webhookCalls
		if i == 0 {
			// Printed, not logged: a benchmark's log is cut to a few
			// lines.
			fmt.Fprintf(os.Stderr, "%d nodes: requests of one change, by verb, resource and code:\n%s", n, after.minus(before))
		}
	}
	return m
}

// reportProcess reports what the fleet costs the processes: this one's
// heap and goroutines per agent, and the peak RSS of each process.
func reportProcess(b *testing.B, agents []*agent.Agent, n int) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if dir := os.Getenv("HOSTPROV_FLEET_HEAPPROFILE"); dir != "" {
		// The heap of the live fleet, to see what an agent costs
		// (go test's -memprofile is written after the fleet stopped).
		writeHeapProfile(b, filepath.Join(dir, fmt.Sprintf("heap-%d.pprof", n)))
	}
	b.ReportMetric(float64(ms.HeapInuse)/float64(n)/1024, "heap-KiB/agent")
	b.ReportMetric(float64(runtime.NumGoroutine())/float64(n), "goroutines/agent")
	b.ReportMetric(float64(runtime.NumCPU()), "cpus")
	b.ReportMetric(peakRSS(b, "self")/1024, "peak-RSS-MiB")
	for _, p := range children(b) {
		b.ReportMetric(peakRSS(b, p.pid)/1024, "peak-RSS-MiB-"+p.name)
	}
	runtime.KeepAlive(agents)
}

// install applies what `kubectl apply -k deploy/` installs, but for the
// DaemonSet and the Deployment (and its disruption budget): with no
// kubelet, scheduler or controller manager they would run nothing, and
// the agents and the controller run in this process instead. The
// webhook's Service is the one thing changed: an ExternalName of the
// address (on 127.0.0.1) where this process serves the webhook, which it
// returns, with the webhook configuration's port set to its port. The
// API server still calls the webhook as a Service, trusting the CA the
// controller writes, for the Service's name. It also lets the user
// author create and change HostHooks (deploy/'s author role).
func install(b *testing.B, c *kubetest.Cluster) string {
	b.Helper()
	ctx := b.Context()
	_, objs, err := deploytest.Load("../../../deploy")
	if err != nil {
		b.Fatal(err)
	}
	c.InstallCRDs(b, "../../../deploy/crds")
	addr := freeAddr(b)
	host, portStr, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portStr)
	ap := newApplier(b, c.Config())
	for _, o := range objs {
		switch o.Obj.GetKind() {
		case "CustomResourceDefinition", "DaemonSet", "Deployment", "PodDisruptionBudget":
			continue
		case "Service":
			if o.Obj.GetName() == webhookService {
				o.Obj.Object["spec"] = map[string]any{"type": "ExternalName", "externalName": host}
			}
		case "ValidatingWebhookConfiguration":
			whs, _, _ := unstructured.NestedSlice(o.Obj.Object, "webhooks")
			for _, w := range whs {
				if err := unstructured.SetNestedField(w.(map[string]any), int64(port), "clientConfig", "service", "port"); err != nil {
					b.Fatal(err)
				}
			}
			if err := unstructured.SetNestedSlice(o.Obj.Object, whs, "webhooks"); err != nil {
				b.Fatal(err)
			}
		}
		ap.apply(ctx, o)
	}
	if err := c.Client(b).Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: author},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: authorRole},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: author}}}); err != nil {
		b.Fatal(err)
	}
	return addr
}

// applier applies objects as `kubectl apply --server-side` does.
type applier struct {
	b      *testing.B
	dyn    *dynamic.DynamicClient
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newApplier(b *testing.B, cfg *rest.Config) *applier {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return &applier{b: b, dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

func (a *applier) apply(ctx context.Context, o deploytest.Object) {
	a.b.Helper()
	gvk := o.Obj.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		a.b.Fatalf("%s: %v", o, err)
	}
	var r dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
	if m.Scope.Name() == "namespace" {
		r = a.dyn.Resource(m.Resource).Namespace(o.Obj.GetNamespace())
	}
	if _, err := r.Apply(ctx, o.Obj.GetName(), o.Obj, metav1.ApplyOptions{FieldManager: "kubectl", Force: true}); err != nil {
		a.b.Fatalf("applying %s: %v", o, err)
	}
}

func freeAddr(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// podTokens makes, for each node, a Pod of serviceAccount on it (it stays
// Pending: no kubelet runs it) and a token of serviceAccount bound to that
// Pod, as the kubelet requests for a projected token: the API server puts
// the node's name into the token and so into the user info of its
// requests (authentication.kubernetes.io/node-name). It returns the
// tokens by node.
func podTokens(b *testing.B, c *kubetest.Cluster, serviceAccount string, nodes []string) map[string]string {
	b.Helper()
	cl := c.Client(b)
	ctx := b.Context()
	var mu sync.Mutex
	tokens := make(map[string]string, len(nodes))
	parallel(b, nodes, func(node string) error {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: fleetNS, Name: serviceAccount + "-" + node},
			Spec: corev1.PodSpec{
				NodeName:                     node,
				ServiceAccountName:           serviceAccount,
				AutomountServiceAccountToken: ptr.To(false),
				Containers:                   []corev1.Container{{Name: "hostprov", Image: "hostprov.invalid/hostprov"}},
			},
		}
		if err := cl.Create(ctx, pod); err != nil {
			return fmt.Errorf("pod %s: %w", pod.Name, err)
		}
		req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To[int64](4 * 3600),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
		}}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: fleetNS, Name: serviceAccount}}
		if err := cl.SubResource("token").Create(ctx, sa, req); err != nil {
			return fmt.Errorf("token of %s: %w", pod.Name, err)
		}
		mu.Lock()
		tokens[node] = req.Status.Token
		mu.Unlock()
		return nil
	})
	return tokens
}

// agentConfig is how one agent reaches the API server.
type agentConfig struct {
	rest *rest.Config
	http *http.Client
}

// agentConfigs are the agents' configurations: each sends its own token,
// over one transport for all (its connections and their TLS), as client-go
// does for a configuration with a Transport: the token is added by a
// wrapper of it. HTTP/2 carries the agents' requests and watches over few
// connections; what the API server authenticates, authorizes, admits and
// counts is each agent's own.
func agentConfigs(b *testing.B, c *kubetest.Cluster, nodes []string, tokens map[string]string) []agentConfig {
	b.Helper()
	host := c.Config().Host
	shared, err := rest.TransportFor(&rest.Config{Host: host, TLSClientConfig: rest.TLSClientConfig{CAData: c.Config().TLSClientConfig.CAData}})
	if err != nil {
		b.Fatal(err)
	}
	cfgs := make([]agentConfig, len(nodes))
	for i, node := range nodes {
		// client-go's default rate limits, as an agent's.
		cfg := &rest.Config{Host: host, BearerToken: tokens[node], Transport: shared}
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			b.Fatal(err)
		}
		cfgs[i] = agentConfig{rest: cfg, http: hc}
	}
	return cfgs
}

// waitReady waits until every agent says it is ready (its /readyz).
func waitReady(b *testing.B, agents []*agent.Agent) {
	b.Helper()
	for _, a := range agents {
		h := a.Health()
		for {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			if rec.Code == http.StatusOK {
				break
			}
			select {
			case <-b.Context().Done():
				b.Fatalf("an agent not ready: %s", rec.Body)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// waitRefused waits until try fails with an error that says want.
func waitRefused(b *testing.B, want string, try func() error) {
	b.Helper()
	var err error
	werr := wait.PollUntilContextTimeout(b.Context(), 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		err = try()
		return err != nil && strings.Contains(err.Error(), want), nil
	})
	if werr != nil {
		b.Fatalf("admission never refused with %q: the last try gave %v", want, err)
	}
}

// writeHeapProfile writes the heap profile (pprof) into file.
func writeHeapProfile(b *testing.B, file string) {
	b.Helper()
	f, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
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
