package e2e

import (
	"bufio"
	"bytes"
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
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/internal/deploytest"
	"github.com/hostprov/hostprov/internal/kube/admission"
	"github.com/hostprov/hostprov/internal/kube/agent"
	"github.com/hostprov/hostprov/internal/kube/controller"
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
// with its service account's token, leader election and its webhook
// server, and HOSTPROV_FLEET_NODES agents (a comma-separated list of
// fleet sizes, one sub-benchmark each; default 1,000), each with
// applytest's fake systemd, its own watches and client, and its own
// service-account token bound to a Pod on its Node, so that the agent
// policy holds it to its node. All run in this process; only the
// kubelets, the scheduler and the controller manager are missing (their
// Pods stay Pending).
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
//     the machine is shared), and peak-RSS-MiB of this process (agents,
//     controller, webhook), of kube-apiserver and of etcd.
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
	ctx := b.Context()
	addr := install(b, c)

	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("node-%05d", i)
	}
	parallel(b, names, func(name string) error {
		return cl.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"fleet": "bench"}}})
	})
	// Every agent's token, and the controller's (its pod on the first
	// node): minted as the kubelet mints them, bound to a Pod.
	tokens := podTokens(b, c, agentSA, names)
	ctrlToken := podTokens(b, c, controllerSA, names[:1])[names[0]]

	// The controller with its own identity: the webhook first (its
	// certificate, the configuration's CA, then serving), as the
	// controller command does, then the manager with leader election.
	ca := c.Config().TLSClientConfig.CAData
	ctrlCfg := &rest.Config{Host: c.Config().Host, BearerToken: ctrlToken, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
	// The controller's own connections, as its own pod has. client-go
	// shares one transport among configurations of the same TLS settings,
	// and the agents' have the same CA: at 10,000 nodes the controller's
	// Lease renewals queued with the agents' thousands of watches for new
	// connections (TLS handshake timeouts), and it lost its Lease on the
	// first rollout. A dialer of its own makes its transport its own.
	ctrlCfg.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	ctrlClient, err := client.New(ctrlCfg, client.Options{Scheme: kubetest.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	cert, err := admission.EnsureCertificate(ctx, ctrlClient, fleetNS, webhookSecret, webhookService, webhookConfig)
	if err != nil {
		b.Fatal(err)
	}
	var webhookCalls atomic.Int64
	handler := admission.NewHandler(logr.Discard())
	mux := http.NewServeMux()
	mux.Handle(admission.Path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		webhookCalls.Add(1)
		handler.ServeHTTP(w, r)
	}))
	runBench(b, func(ctx context.Context) error { return admission.Serve(ctx, addr, cert, mux) })

	authorCfg := rest.CopyConfig(c.Config())
	authorCfg.Impersonate = rest.ImpersonationConfig{UserName: author}
	authorClient, err := client.New(authorCfg, client.Options{Scheme: kubetest.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	// The API server takes up a new webhook configuration and policies a
	// moment after they are stored: wait until each refuses what it
	// refuses (dry runs, which admission sees and nothing stores).
	waitRefused(b, `admission webhook "hosthooks.hostprov.dev" denied`, func() error {
		return authorClient.Create(ctx, &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "probe"},
			Spec: v1alpha1.HostHooksSpec{Hooks: []v1alpha1.Hook{{Name: "probe"}}}}, client.DryRunAll)
	})
	agentCfgs := agentConfigs(b, c, names, tokens)
	probe := &v1alpha1.NodeHooks{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.NodeHooksName("probe", names[1])},
		Spec: v1alpha1.NodeHooksSpec{NodeName: names[1], HostHooks: "probe"}}
	if err := cl.Create(ctx, probe); err != nil {
		b.Fatal(err)
	}
	agent0, err := client.New(agentCfgs[0].rest, client.Options{Scheme: kubetest.Scheme, HTTPClient: agentCfgs[0].http})
	if err != nil {
		b.Fatal(err)
	}
	waitRefused(b, "hostprov-agent-own-node", func() error {
		probe.Status.Message = "probe"
		return agent0.Status().Update(ctx, probe, client.DryRunAll)
	})
	if err := cl.Delete(ctx, probe); err != nil {
		b.Fatal(err)
	}

	// The controller's Lease requests are in the leader-election
	// priority level by deploy/'s FlowSchema (flowschema.yaml), which
	// install applied: without it, at 10,000 nodes, its renewals queued
	// behind its own creates and the agents' writes, and it lost its
	// lease on the first rollout.
	mgr, err := controller.NewManager(ctrlCfg, controller.Options{Namespace: fleetNS, LeaderElection: true, Logger: logr.Discard()})
	if err != nil {
		b.Fatal(err)
	}
	// The agents start in waves, each once the one before is ready (its
	// caches synced), as a DaemonSet's pods come up over minutes, not in
	// one instant: 10,000 agents listing and watching at once kept a
	// 2-core API server from accepting connections, and the controller
	// lost its lease.
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	agents := make([]*agent.Agent, n)
	const wave = 500
	for lo := 0; lo < n; lo += wave {
		hi := min(lo+wave, n)
		for i := lo; i < hi; i++ {
			opts := apply.Options{Root: b.TempDir()}
			if err := apply.PrepareDirs(opts); err != nil {
				b.Fatal(err)
			}
			sd := &agent.Systemd{Systemd: applytest.New()}
			// The agent command's spread of watch starts, as in
			// production: the first rollout of a new HostHooks waits for
			// it, and its time says so.
			a, err := agent.New(agent.Config{NodeName: names[i], REST: agentCfgs[i].rest, HTTPClient: agentCfgs[i].http, Options: opts, Log: quiet,
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
	b.Logf("%d nodes: the agents are ready", n)

	// The controller starts once the agents are up. Started before them,
	// it lost its Lease at 10,000 nodes while the agents came up: on this
	// machine the API server, etcd and 10,000 agents share 2 cores, and
	// the waves of lists and watches kept its renewals past their
	// deadline. The start of a fleet is not what this measures; in a
	// cluster the API server has cores of its own.
	done, lease := watchFleet(b, c.Config(), cl)
	runBench(b, func(ctx context.Context) error {
		err := mgr.Start(ctx)
		if ctx.Err() == nil {
			// It lost its lease (or failed): nothing rolls out any
			// more, so say why and when rather than wait.
			done.fail(fmt.Sprintf("the controller stopped at %s: %v", time.Now().Format("15:04:05.000"), err))
		}
		return err
	})

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
	if err := authorClient.Create(ctx, hh); err != nil {
		b.Fatal(err)
	}
	done.wait(b, v1alpha1.HooksHash(hh.Spec.Hooks), n)
	b.Logf("%d nodes: first rollout complete in %v", n, time.Since(start).Round(time.Millisecond))

	var reqs, calls float64
	var elapsed time.Duration
	first := scrape(b, c)
	renewals, transitions := lease.counts()
	b.ResetTimer()
	for i := range b.N {
		before := scrape(b, c)
		callsBefore := webhookCalls.Load()
		start := time.Now()
		if err := authorClient.Get(ctx, client.ObjectKeyFromObject(hh), hh); err != nil {
			b.Fatal(err)
		}
		hh.Spec.Hooks = benchHooks(i + 1)
		if err := authorClient.Update(ctx, hh); err != nil {
			b.Fatal(err)
		}
		done.wait(b, v1alpha1.HooksHash(hh.Spec.Hooks), n)
		elapsed += time.Since(start)
		after := scrape(b, c)
		reqs += after.requests - before.requests
		calls += float64(webhookCalls.Load() - callsBefore)
		if i == 0 {
			// Printed, not logged: a benchmark's log is cut to a few
			// lines.
			fmt.Fprintf(os.Stderr, "%d nodes: requests of one change, by verb, resource and code:\n%s", n, after.minus(before))
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
	fmt.Fprintf(os.Stderr, "%d nodes: requests at rest, by verb, resource and code, over %v:\n%s", n, idle, after.minus(before))
	renewals2, transitions2 := lease.counts()
	load1After, loadAfter := loadavg(b)

	var syncs, writes int64
	for _, a := range agents {
		st := a.Stats()
		syncs += st.Syncs
		writes += st.StatusWrites
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if dir := os.Getenv("HOSTPROV_FLEET_HEAPPROFILE"); dir != "" {
		// The heap of the live fleet, to see what an agent costs
		// (go test's -memprofile is written after the fleet stopped).
		writeHeapProfile(b, filepath.Join(dir, fmt.Sprintf("heap-%d.pprof", n)))
	}
	goroutines := runtime.NumGoroutine()
	b.ReportMetric(elapsed.Seconds()/float64(b.N), "s/change")
	b.ReportMetric(reqs/float64(b.N)/float64(n), "req/node/change")
	b.ReportMetric(calls/float64(b.N), "webhook/change")
	b.ReportMetric(after.denials-first.denials, "policy-denials")
	b.ReportMetric(float64(renewals2-renewals), "lease-renewals")
	b.ReportMetric(float64(transitions2-transitions), "lease-transitions")
	b.ReportMetric(rate, "idle-req/s")
	b.ReportMetric(rate*60/float64(n), "idle-req/node/min")
	b.ReportMetric(after.watches/float64(n), "watches/node")
	b.ReportMetric(float64(ms.HeapInuse)/float64(n)/1024, "heap-KiB/agent")
	b.ReportMetric(float64(goroutines)/float64(n), "goroutines/agent")
	b.ReportMetric(float64(runtime.NumCPU()), "cpus")
	b.ReportMetric(load1Before, "load1-before")
	b.ReportMetric(load1After, "load1-after")
	b.ReportMetric(peakRSS(b, "self")/1024, "peak-RSS-MiB")
	for _, p := range children(b) {
		b.ReportMetric(peakRSS(b, p.pid)/1024, "peak-RSS-MiB-"+p.name)
	}
	b.Logf("%d nodes: %d applies, %d status writes in all; %v of measuring, %d webhook calls in all, %.0f policy denials in all (the probes'), %.0f policy errors; loadavg %s before, %s after, %d CPUs",
		n, syncs, writes, elapsed.Round(time.Millisecond), webhookCalls.Load(), after.denials, after.policyEr, loadBefore, loadAfter, runtime.NumCPU())
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

// loadavg is the machine's 1-minute load average, and the whole line of
// /proc/loadavg's three averages.
func loadavg(b *testing.B) (float64, string) {
	b.Helper()
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		b.Fatalf("/proc/loadavg: %q", data)
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		b.Fatalf("/proc/loadavg: %v", err)
	}
	return v, strings.Join(f[:3], " ")
}

// resetPeakRSS resets this process's peak RSS (VmHWM), so that each fleet
// size reports its own.
func resetPeakRSS() {
	// Linux since 4.0; where it fails, the peak is the process's.
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSS is the peak RSS (VmHWM) of process pid ("self" for this one),
// in KiB.
func peakRSS(b *testing.B, pid string) float64 {
	b.Helper()
	data, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				b.Fatalf("/proc/%s/status: %q: %v", pid, line, err)
			}
			return kb
		}
	}
	b.Fatalf("/proc/%s/status has no VmHWM", pid)
	return 0
}

// process is a child process of this one: the cluster's etcd and
// kube-apiserver.
type process struct{ pid, name string }

func children(b *testing.B) []process {
	b.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		b.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())
	var ps []process
	for _, stat := range stats {
		data, err := os.ReadFile(stat)
		if err != nil {
			continue // ended since
		}
		// pid (comm) state ppid ...
		s := string(data)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		if f := strings.Fields(s[end+1:]); len(f) > 1 && f[1] == self {
			ps = append(ps, process{pid: filepath.Base(filepath.Dir(stat)), name: s[open+1 : end]})
		}
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].name < ps[j].name })
	return ps
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
	mu     sync.Mutex
	cond   *sync.Cond
	last   v1alpha1.HostHooksStatus
	gen    int64
	failed string // why waiting is in vain
}

// leaseWatch counts the changes of the controller's Lease: renewals by
// its holder, and changes of holder.
type leaseWatch struct {
	renewals, transitions atomic.Int64
}

func (l *leaseWatch) counts() (renewals, transitions int64) {
	return l.renewals.Load(), l.transitions.Load()
}

// watchFleet watches the HostHooks and the controller's Lease.
func watchFleet(b *testing.B, cfg *rest.Config, cl client.Client) (*completeWatch, *leaseWatch) {
	b.Helper()
	ca, err := cache.New(cfg, cache.Options{Scheme: cl.Scheme(), ByObject: map[client.Object]cache.ByObject{
		&coordinationv1.Lease{}: {Namespaces: map[string]cache.Config{fleetNS: {}},
			Field: fields.OneTermEqualSelector("metadata.name", controller.LeaseName)},
	}})
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
	linf, err := ca.GetInformer(b.Context(), &coordinationv1.Lease{})
	if err != nil {
		b.Fatal(err)
	}
	l := &leaseWatch{}
	if _, err := linf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(o, n any) {
		old, ok1 := o.(*coordinationv1.Lease)
		lease, ok2 := n.(*coordinationv1.Lease)
		switch {
		case !ok1 || !ok2:
		case ptr.Deref(old.Spec.HolderIdentity, "") != ptr.Deref(lease.Spec.HolderIdentity, ""):
			l.transitions.Add(1)
		case !old.Spec.RenewTime.Equal(lease.Spec.RenewTime):
			l.renewals.Add(1)
		}
	}}); err != nil {
		b.Fatal(err)
	}
	runBench(b, ca.Start)
	if !ca.WaitForCacheSync(b.Context()) {
		b.Fatal("the HostHooks and Lease watches did not sync")
	}
	return w, l
}

// fail ends every wait, now and later, with why.
func (w *completeWatch) fail(why string) {
	w.mu.Lock()
	if w.failed == "" {
		w.failed = why
	}
	w.cond.Broadcast()
	w.mu.Unlock()
}

func (w *completeWatch) wait(b *testing.B, hash string, n int) {
	b.Helper()
	timeout := time.AfterFunc(30*time.Minute, func() { w.fail("not complete within 30 minutes") })
	defer timeout.Stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for !(w.last.HooksHash == hash && w.last.ObservedGeneration == w.gen && w.last.Phase == v1alpha1.PhaseComplete &&
		int(w.last.SucceededNodes) == n) {
		if w.failed != "" {
			b.Fatalf("%s: %+v", w.failed, w.last)
		}
		w.cond.Wait()
	}
}

// metrics are the API server's counters.
type metrics struct {
	requests float64            // every verb but WATCH
	watches  float64            // watches being served
	byKey    map[string]float64 // by "VERB resource[/subresource] code"
	denials  float64            // requests the admission policies refused
	policyEr float64            // and admitted with an error of theirs
}

// scrape reads the API server's /metrics.
func scrape(b *testing.B, c *kubetest.Cluster) metrics {
	b.Helper()
	hc, err := rest.HTTPClientFor(c.Config())
	if err != nil {
		b.Fatal(err)
	}
	defer hc.CloseIdleConnections()
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
			m.byKey[key+" "+ls["code"]] += v
		case strings.HasPrefix(line, "apiserver_longrunning_requests{"):
			if ls, v := sample(line); ls["verb"] == "WATCH" {
				m.watches += v
			}
		case strings.HasPrefix(line, "apiserver_validating_admission_policy_check_total{"):
			// Counted are the denials, and the errors of a policy's
			// expressions (admitted: they are not a denial), not the
			// requests a policy admitted.
			switch ls, v := sample(line); ls["enforcement_action"] {
			case "deny":
				m.denials += v
			case "allow":
				m.policyEr += v
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
