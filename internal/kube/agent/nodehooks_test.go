package agent

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/internal/kubetest"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/apply/applytest"
)

// readsOf records the agent's reads (lists and watches) of NodeHooks, as
// their queries.
type readsOf struct {
	mu    sync.Mutex
	next  http.RoundTripper
	reads []url.Values
}

func (r *readsOf) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/nodehooks") {
		r.mu.Lock()
		r.reads = append(r.reads, req.URL.Query())
		r.mu.Unlock()
	}
	return r.next.RoundTrip(req)
}

func (r *readsOf) all() []url.Values {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reads)
}

// readsCluster starts an API server with the CRDs and node in it, and
// returns an HTTP client for it that records the reads of NodeHooks, and
// the apply options of a scratch root.
func readsCluster(t *testing.T, node *corev1.Node) (*kubetest.Cluster, client.Client, *http.Client, *readsOf, apply.Options) {
	t.Helper()
	c := kubetest.Start(t)
	c.InstallCRDs(t, "../../../deploy/crds")
	cl := c.Client(t)
	if err := cl.Create(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	reads := &readsOf{next: hc.Transport}
	hc.Transport = reads
	opts := apply.Options{Root: t.TempDir()}
	if err := apply.PrepareDirs(opts); err != nil {
		t.Fatal(err)
	}
	return c, cl, hc, reads, opts
}

// TestKubeAgentWatchesNodeHooksByName: the agent reads its NodeHooks by
// name, one watch for each HostHooks, never by a label that the API
// server would match against every NodeHooks event of the cluster for
// every agent. Each watch starts with a list from the API server's watch
// cache. A NodeHooks of the node under another name is not read; the watch
// of a new HostHooks starts with it.
func TestKubeAgentWatchesNodeHooksByName(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{"role": "worker"}}}
	c, cl, hc, reads, opts := readsCluster(t, node)
	ctx := t.Context()
	sd := &Systemd{Systemd: applytest.New()}
	a, err := New(Config{NodeName: node.Name, REST: c.Config(), HTTPClient: hc, Options: opts,
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Connect: func(context.Context) (*Systemd, error) { return sd, nil }})
	if err != nil {
		t.Fatal(err)
	}
	runAgent(t, a)

	approve := func(hh *v1alpha1.HostHooks, name string) *v1alpha1.NodeHooks {
		t.Helper()
		nh := &v1alpha1.NodeHooks{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				v1alpha1.LabelNode: v1alpha1.LabelValue(node.Name), v1alpha1.LabelHostHooks: v1alpha1.LabelValue(hh.Name)}},
			Spec: v1alpha1.NodeHooksSpec{NodeName: node.Name, HostHooks: hh.Name, HooksHash: v1alpha1.HooksHash(hh.Spec.Hooks)}}
		if err := cl.Create(ctx, nh); err != nil {
			t.Fatal(err)
		}
		return nh
	}
	var want []string // the names the agent may read
	for _, name := range []string{"web", "db"} {
		hh := &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.HostHooksSpec{
			Hooks: []v1alpha1.Hook{service(name + "-svc")}}}
		if err := cl.Create(ctx, hh); err != nil {
			t.Fatal(err)
		}
		// Of the node, for hh, but not of the name the controller
		// gives it: an earlier naming, which the controller replaces.
		other := approve(hh, hh.Name+"."+node.Name)
		nh := approve(hh, v1alpha1.NodeHooksName(hh.Name, node.Name))
		want = append(want, nh.Name)
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return phaseOf(t, cl, nh) == v1alpha1.NodeSucceeded, nil
		})
		if err != nil {
			t.Fatalf("the NodeHooks of %s: phase %q, want Succeeded", name, phaseOf(t, cl, nh))
		}
		if p := phaseOf(t, cl, other); p != "" {
			t.Errorf("the NodeHooks of %s under another name: phase %q, want none written", name, p)
		}
	}

	var watches int
	named := map[string]bool{}
	for _, q := range reads.all() {
		if q.Get("labelSelector") != "" {
			t.Errorf("a read of NodeHooks by label: %v", q)
		}
		name, ok := strings.CutPrefix(q.Get("fieldSelector"), "metadata.name=")
		if !ok || !slices.Contains(want, name) {
			t.Errorf("a read of NodeHooks not by the name of one of %v: %v", want, q)
		}
		named[name] = true
		if q.Get("watch") == "true" {
			watches++
			if q.Get("sendInitialEvents") != "" {
				// A stream of the initial state asks etcd first.
				t.Errorf("a watch of NodeHooks that streams the initial state: %v", q)
			}
		} else if q.Get("resourceVersion") != "0" {
			t.Errorf("a list of NodeHooks not from the watch cache (resourceVersion 0): %v", q)
		}
	}
	if len(named) != len(want) || watches < len(want) {
		t.Errorf("the NodeHooks read by name: %v, with %d watches; want %v, each watched", named, watches, want)
	}
}

// TestKubeAgentSpreadsNewWatches: the watch of a HostHooks made while the
// agent runs starts at a random moment of the spread, so that a fleet's
// agents do not all list and watch at once; one that the agent found at
// its start is watched at once. The window grows with the largest
// HostHooks' matched nodes. Until its watch has listed, the new
// HostHooks' NodeHooks is neither read nor applied.
func TestKubeAgentSpreadsNewWatches(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	c, cl, hc, reads, opts := readsCluster(t, node)
	ctx := t.Context()
	const spread = time.Hour
	create := func(name string, matched int32) (*v1alpha1.HostHooks, *v1alpha1.NodeHooks) {
		t.Helper()
		hh := &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.HostHooksSpec{
			Hooks: []v1alpha1.Hook{service(name + "-svc")}}}
		if err := cl.Create(ctx, hh); err != nil {
			t.Fatal(err)
		}
		if matched > 0 {
			hh.Status.MatchedNodes = matched
			if err := cl.Status().Update(ctx, hh); err != nil {
				t.Fatal(err)
			}
		}
		nh := &v1alpha1.NodeHooks{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.NodeHooksName(name, node.Name)},
			Spec: v1alpha1.NodeHooksSpec{NodeName: node.Name, HostHooks: name, HooksHash: v1alpha1.HooksHash(hh.Spec.Hooks)}}
		if err := cl.Create(ctx, nh); err != nil {
			t.Fatal(err)
		}
		return hh, nh
	}
	readOf := func(name string) bool {
		for _, q := range reads.all() {
			if q.Get("fieldSelector") == "metadata.name="+name {
				return true
			}
		}
		return false
	}

	// Found at the start: watched and applied at once, whatever the
	// spread. Its status says the fleet has 7,200 nodes.
	_, first := create("first", 7200)
	sd := &Systemd{Systemd: applytest.New()}
	a, err := New(Config{NodeName: node.Name, REST: c.Config(), HTTPClient: hc, Options: opts, WatchSpread: spread,
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Connect: func(context.Context) (*Systemd, error) { return sd, nil }})
	if err != nil {
		t.Fatal(err)
	}
	// The delays the agent draws, by the window it draws them from. The
	// new watch is held back for the whole hour.
	windows := make(chan time.Duration, 10)
	a.nodeHooks.delay = func(window time.Duration) time.Duration {
		windows <- window
		return window
	}
	runAgent(t, a)
	waitNodeHooksPhase(t, cl, first, v1alpha1.NodeSucceeded)
	select {
	case w := <-windows:
		t.Fatalf("the watch of a HostHooks found at the start waited (a window of %s)", w)
	default:
	}

	// Made while the agent runs: its watch waits for a moment of the
	// window, the spread or 1 ms for each of the 7,200 nodes (2h).
	_, late := create("late", 0)
	select {
	case w := <-windows:
		if want := 7200 * WatchSpreadPerNode; w != max(spread, want) {
			t.Errorf("the window of a new HostHooks' watch: %s, want %s", w, max(spread, want))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the watch of a new HostHooks started without waiting")
	}
	// A later sync (another event) must not read or apply the held back
	// NodeHooks either.
	_, other := create("other", 0)
	<-windows
	time.Sleep(time.Second) // give a wrong start its chance to show
	if readOf(late.Name) || readOf(other.Name) {
		t.Errorf("the NodeHooks of a new HostHooks read before its moment in the spread")
	}
	if p := phaseOf(t, cl, late); p != "" {
		t.Errorf("the NodeHooks of a new HostHooks: phase %q before its watch started, want none", p)
	}
	if p := phaseOf(t, cl, first); p != v1alpha1.NodeSucceeded {
		t.Errorf("the NodeHooks found at the start: phase %q, want it left Succeeded", p)
	}
}

// phaseOf is the phase of the stored status of nh.
func phaseOf(t *testing.T, cl client.Client, nh *v1alpha1.NodeHooks) v1alpha1.NodePhase {
	t.Helper()
	var got v1alpha1.NodeHooks
	if err := cl.Get(t.Context(), client.ObjectKeyFromObject(nh), &got); err != nil {
		t.Fatal(err)
	}
	return got.Status.Phase
}
