package controller_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/hostprov/hostprov/internal/kube/controller"
	"github.com/hostprov/hostprov/internal/kubetest"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// How long the tests wait for the controller to act: it acts in
// milliseconds, but a loaded CI machine may take its time.
const waitFor = 30 * time.Second

// settle is how long a test watches for something that must not happen.
const settle = 1500 * time.Millisecond

func startCluster(t *testing.T) (*kubetest.Cluster, client.Client) {
	t.Helper()
	c := kubetest.Start(t)
	c.InstallCRDs(t, "../../../deploy/crds")
	cl := c.Client(t)
	// An established CRD may be missing from discovery for a moment
	// still, on a loaded machine: wait until the client finds it.
	eventually(t, "HostHooks in discovery", func() error {
		return cl.List(t.Context(), &v1alpha1.HostHooksList{})
	})
	return c, cl
}

// requests counts a client's requests by method and path, with the names
// of objects replaced by NAME.
type requests struct {
	mu sync.Mutex
	n  map[string]int
}

var namedObject = regexp.MustCompile(`^(/apis/hostprov\.dev/v1alpha1/(?:nodehooks|hosthooks)|/api/v1/nodes)/[^/?]+`)

func (r *requests) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		key := req.Method + " " + namedObject.ReplaceAllString(req.URL.Path, "$1/NAME")
		if req.URL.Query().Get("watch") == "true" {
			key += "?watch"
		}
		if strings.Contains(req.Header.Get("Accept"), "as=PartialObjectMetadata") {
			key += " (metadata)"
		}
		r.mu.Lock()
		if r.n == nil {
			r.n = map[string]int{}
		}
		r.n[key]++
		r.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

func (r *requests) count(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[key]
}

func (r *requests) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var lines []string
	for k, v := range r.n {
		lines = append(lines, fmt.Sprintf("%5d %s", v, k))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// startController runs a controller manager until the test ends, or until
// the returned stop is called, which waits for it to end.
func startController(t *testing.T, cfg *rest.Config, opts controller.Options) (manager.Manager, func()) {
	t.Helper()
	opts.Logger = logr.FromSlogHandler(testLogHandler(t))
	mgr, err := controller.NewManager(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return mgr, stop
}

// eventually calls f until it returns nil, failing the test with its last
// error after waitFor.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	eventuallyWithin(t, waitFor, what, f)
}

func eventuallyWithin(t *testing.T, within time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// never fails the test if f returns an error during settle.
func never(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(settle)
	for time.Now().Before(deadline) {
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func createNode(t *testing.T, cl client.Client, name string, labels map[string]string) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := cl.Create(t.Context(), n); err != nil {
		t.Fatal(err)
	}
}

func labelNode(t *testing.T, cl client.Client, name string, labels map[string]string) {
	t.Helper()
	var n corev1.Node
	if err := cl.Get(t.Context(), client.ObjectKey{Name: name}, &n); err != nil {
		t.Fatal(err)
	}
	n.Labels = labels
	if err := cl.Update(t.Context(), &n); err != nil {
		t.Fatal(err)
	}
}

// nodeHooks are the NodeHooks of the HostHooks hh, by node name.
func nodeHooks(ctx context.Context, cl client.Client, hh string) (map[string]*v1alpha1.NodeHooks, error) {
	var l v1alpha1.NodeHooksList
	if err := cl.List(ctx, &l, client.MatchingLabels{v1alpha1.LabelHostHooks: v1alpha1.LabelValue(hh)}); err != nil {
		return nil, err
	}
	m := make(map[string]*v1alpha1.NodeHooks, len(l.Items))
	for i := range l.Items {
		m[l.Items[i].Spec.NodeName] = &l.Items[i]
	}
	return m, nil
}

// approved are the nodes whose NodeHooks of hh are approved for hash.
func approved(ctx context.Context, cl client.Client, hh, hash string) ([]string, error) {
	nhs, err := nodeHooks(ctx, cl, hh)
	if err != nil {
		return nil, err
	}
	var out []string
	for node, nh := range nhs {
		if nh.Spec.HooksHash == hash {
			out = append(out, node)
		}
	}
	slices.Sort(out)
	return out, nil
}

// report plays the agent of node: it writes the status of the node's
// NodeHooks for hh, as the agent does after an apply.
func report(t *testing.T, cl client.Client, hh, node string, st v1alpha1.NodeHooksStatus) {
	t.Helper()
	var nh v1alpha1.NodeHooks
	if err := cl.Get(t.Context(), client.ObjectKey{Name: v1alpha1.NodeHooksName(hh, node)}, &nh); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	st.AppliedAt = &now
	nh.Status = st
	if err := cl.Status().Update(t.Context(), &nh); err != nil {
		t.Fatal(err)
	}
}

func succeeded(hash string) v1alpha1.NodeHooksStatus {
	return v1alpha1.NodeHooksStatus{Phase: v1alpha1.NodeSucceeded, AppliedHash: hash,
		Hooks: []v1alpha1.HookResult{{Name: "iscsi", Unit: "iscsi.service", Phase: "succeeded", Output: []string{"installed fine"}}}}
}

func getHostHooks(ctx context.Context, cl client.Client, name string) (*v1alpha1.HostHooks, error) {
	var hh v1alpha1.HostHooks
	err := cl.Get(ctx, client.ObjectKey{Name: name}, &hh)
	return &hh, err
}

// statusIs waits until the status of the HostHooks name is for its
// current generation and has the counts and phase.
func statusIs(t *testing.T, cl client.Client, name string, matched, updated, succeeded, failed int32, phase v1alpha1.Phase) *v1alpha1.HostHooks {
	t.Helper()
	var hh *v1alpha1.HostHooks
	eventually(t, "status of "+name, func() error {
		var err error
		if hh, err = getHostHooks(t.Context(), cl, name); err != nil {
			return err
		}
		st := hh.Status
		got := fmt.Sprintf("generation %d: %d matched, %d updated, %d succeeded, %d failed, %s",
			st.ObservedGeneration, st.MatchedNodes, st.UpdatedNodes, st.SucceededNodes, st.FailedNodes, st.Phase)
		want := fmt.Sprintf("generation %d: %d matched, %d updated, %d succeeded, %d failed, %s",
			hh.Generation, matched, updated, succeeded, failed, phase)
		if got != want || st.HooksHash != v1alpha1.HooksHash(hh.Spec.Hooks) {
			return fmt.Errorf("status is %s (hash %s), want %s", got, st.HooksHash, want)
		}
		return nil
	})
	return hh
}

// TestController runs the controller against a real API server, playing
// the agents by writing the NodeHooks status: it creates the NodeHooks of
// the matched nodes, approves them one at a time under maxUnavailable 1,
// stops at the failure threshold, rolls a change of hooks out again,
// follows nodes that join, leave and go, sums the failures up, and lets a
// deleted HostHooks go once every node removed its hooks. It reads nothing
// from the server but by its watches, and sends one patch per approval.
func TestController(t *testing.T) {
	c, cl := startCluster(t)
	ctx := t.Context()
	var reqs requests
	cfg := c.Config()
	cfg.Wrap(reqs.wrap)
	startController(t, cfg, controller.Options{})

	workers := map[string]string{"node-role.kubernetes.io/worker": ""}
	for _, n := range []string{"w1", "w2", "w3"} {
		createNode(t, cl, n, workers)
	}
	createNode(t, cl, "cp1", map[string]string{"node-role.kubernetes.io/control-plane": ""})

	hooks := []v1alpha1.Hook{{
		Name: "iscsi",
		Steps: []v1alpha1.Step{
			{Name: "install", Run: []string{"/usr/bin/apt-get", "install", "-y", "open-iscsi"}},
			{Name: "enable", Run: []string{"/bin/systemctl", "enable", "--now", "iscsid"}},
		},
	}}
	hh := &v1alpha1.HostHooks{
		ObjectMeta: metav1.ObjectMeta{Name: "iscsi"},
		Spec: v1alpha1.HostHooksSpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: workers},
			Rollout:      v1alpha1.Rollout{MaxUnavailable: new(intstr.FromInt32(1))},
			Hooks:        hooks,
		},
	}
	if err := cl.Create(ctx, hh); err != nil {
		t.Fatal(err)
	}
	h1 := v1alpha1.HooksHash(hooks)

	checkNodeHooksMade(t, cl)
	rollOutToFailure(t, cl, h1)
	h2, got := rollOutChange(t, cl)
	followNodes(t, cl, h2, workers)
	deleteAfterAgents(t, cl, got, h2)
	checkRequests(t, &reqs)
}

// approvedAre is nil when the nodes approved for hash of the HostHooks
// named hh are want.
func approvedAre(ctx context.Context, cl client.Client, hh, hash string, want ...string) func() error {
	return func() error {
		got, err := approved(ctx, cl, hh, hash)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("approved %v, want %v", got, want)
		}
		return nil
	}
}

// checkNodeHooksMade: TestController's HostHooks gets its finalizer, and a
// NodeHooks for each worker, as the agents expect them.
func checkNodeHooksMade(t *testing.T, cl client.Client) {
	t.Helper()
	ctx := t.Context()
	eventually(t, "NodeHooks of the workers", func() error {
		nhs, err := nodeHooks(ctx, cl, "iscsi")
		if err != nil {
			return err
		}
		if len(nhs) != 3 || nhs["w1"] == nil || nhs["w2"] == nil || nhs["w3"] == nil {
			return fmt.Errorf("NodeHooks of %v", slices.Sorted(maps.Keys(nhs)))
		}
		return nil
	})
	got, err := getHostHooks(ctx, cl, "iscsi")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got.Finalizers, v1alpha1.Finalizer) {
		t.Errorf("finalizers %v, want %s", got.Finalizers, v1alpha1.Finalizer)
	}
	nhs, err := nodeHooks(ctx, cl, "iscsi")
	if err != nil {
		t.Fatal(err)
	}
	for node, nh := range nhs {
		ref := metav1.GetControllerOf(nh)
		if nh.Name != v1alpha1.NodeHooksName("iscsi", node) || nh.Labels[v1alpha1.LabelNode] != node ||
			nh.Spec.HostHooks != "iscsi" || ref == nil || ref.UID != got.UID || ref.Kind != "HostHooks" ||
			(ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion) {
			t.Errorf("NodeHooks of %s: %+v", node, nh.ObjectMeta)
		}
	}
}

// rollOutToFailure: the first of TestController's nodes is approved, and
// only it; when it succeeds, the second is, which fails, and the rollout
// stops there with the failure summed up.
func rollOutToFailure(t *testing.T, cl client.Client, h1 string) {
	t.Helper()
	ctx := t.Context()
	eventually(t, "the first approval", approvedAre(ctx, cl, "iscsi", h1, "w1"))
	statusIs(t, cl, "iscsi", 3, 0, 0, 0, v1alpha1.PhaseProgressing)
	never(t, "a second approval while w1 applies", approvedAre(ctx, cl, "iscsi", h1, "w1"))

	// w1 succeeds: w2 is next, then w2 fails and the rollout stops there.
	report(t, cl, "iscsi", "w1", succeeded(h1))
	eventually(t, "the approval after w1", approvedAre(ctx, cl, "iscsi", h1, "w1", "w2"))
	statusIs(t, cl, "iscsi", 3, 1, 1, 0, v1alpha1.PhaseProgressing)
	never(t, "a third approval while w2 applies", approvedAre(ctx, cl, "iscsi", h1, "w1", "w2"))
	code := int32(100)
	report(t, cl, "iscsi", "w2", v1alpha1.NodeHooksStatus{
		Phase: v1alpha1.NodeFailed, AppliedHash: h1,
		Hooks: []v1alpha1.HookResult{{
			Name: "iscsi", Unit: "iscsi.service", Phase: "failed", Message: "step install failed",
			Steps: []v1alpha1.StepResult{
				{Name: "install", State: "failed", ExitCode: &code, Reason: "exit-code"},
				{Name: "enable", State: "not run"},
			},
			Output: []string{"E: Unable to locate package open-iscsi"},
		}},
	})
	got := statusIs(t, cl, "iscsi", 3, 2, 1, 1, v1alpha1.PhaseDegraded)
	wantErrs := []v1alpha1.ErrorSummary{{Hook: "iscsi", Step: "install", Count: 1, Nodes: []string{"w2"}, ExitCode: &code, Reason: "exit-code", Message: "step install failed"}}
	if !equalJSON(got.Status.Errors, wantErrs) {
		t.Errorf("errors %s, want %s", toJSON(got.Status.Errors), toJSON(wantErrs))
	}
	if c := condition(got, v1alpha1.ConditionDegraded); c.Status != metav1.ConditionTrue {
		t.Errorf("Degraded: %+v", c)
	}
	never(t, "an approval past the failure threshold", approvedAre(ctx, cl, "iscsi", h1, "w1", "w2"))
}

// rollOutChange: new hooks roll out from the first node again, one at a
// time, past nodes that are busy with the old ones, to Complete. It
// returns their hash and the HostHooks.
func rollOutChange(t *testing.T, cl client.Client) (string, *v1alpha1.HostHooks) {
	t.Helper()
	ctx := t.Context()
	eventually(t, "changing the hooks", func() error {
		hh, err := getHostHooks(ctx, cl, "iscsi")
		if err != nil {
			return err
		}
		hh.Spec.Hooks[0].Steps[0].Run = []string{"/usr/bin/apt-get", "install", "-y", "open-iscsi", "multipath-tools"}
		return cl.Update(ctx, hh)
	})
	got, err := getHostHooks(ctx, cl, "iscsi")
	if err != nil {
		t.Fatal(err)
	}
	h2 := v1alpha1.HooksHash(got.Spec.Hooks)
	for i, node := range []string{"w1", "w2", "w3"} {
		want := []string{"w1", "w2", "w3"}[:i+1]
		eventually(t, "approval of "+node+" for the new hooks", approvedAre(ctx, cl, "iscsi", h2, want...))
		report(t, cl, "iscsi", node, succeeded(h2))
	}
	got = statusIs(t, cl, "iscsi", 3, 3, 3, 0, v1alpha1.PhaseComplete)
	if got.Status.Errors != nil {
		t.Errorf("errors after the failure was fixed: %s", toJSON(got.Status.Errors))
	}
	if c := condition(got, v1alpha1.ConditionComplete); c.Status != metav1.ConditionTrue || c.ObservedGeneration != got.Generation {
		t.Errorf("Complete: %+v", c)
	}
	return h2, got
}

// followNodes: w3 leaves the selector: it no longer counts, the removal of
// its hooks is approved (no other node is unavailable), and its NodeHooks
// goes once its agent reports the hooks removed. w4 joins and gets the
// hooks; cp1 never had a NodeHooks. w2 is gone: so is its NodeHooks.
func followNodes(t *testing.T, cl client.Client, h2 string, workers map[string]string) {
	t.Helper()
	ctx := t.Context()
	labelNode(t, cl, "w3", nil)
	statusIs(t, cl, "iscsi", 2, 2, 2, 0, v1alpha1.PhaseComplete)
	eventually(t, "the removal of w3's hooks approved", func() error {
		nhs, err := nodeHooks(ctx, cl, "iscsi")
		if err == nil && (nhs["w3"] == nil || !nhs["w3"].Spec.Remove) {
			err = fmt.Errorf("w3's NodeHooks: %s", toJSON(nhs["w3"]))
		}
		return err
	})
	never(t, "deleting w3's NodeHooks before the agent removed the hooks", func() error {
		nhs, err := nodeHooks(ctx, cl, "iscsi")
		if err != nil || nhs["w3"] == nil {
			return fmt.Errorf("w3's NodeHooks: %v", err)
		}
		return nil
	})
	report(t, cl, "iscsi", "w3", v1alpha1.NodeHooksStatus{Phase: v1alpha1.NodeRemoved, AppliedHash: h2})
	eventually(t, "w3's NodeHooks deleted", func() error {
		nhs, err := nodeHooks(ctx, cl, "iscsi")
		if err == nil && nhs["w3"] != nil {
			err = errors.New("still there")
		}
		return err
	})
	createNode(t, cl, "w4", workers)
	eventually(t, "approval of w4", approvedAre(ctx, cl, "iscsi", h2, "w1", "w2", "w4"))
	report(t, cl, "iscsi", "w4", succeeded(h2))
	statusIs(t, cl, "iscsi", 3, 3, 3, 0, v1alpha1.PhaseComplete)

	if err := cl.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w2"}}); err != nil {
		t.Fatal(err)
	}
	statusIs(t, cl, "iscsi", 2, 2, 2, 0, v1alpha1.PhaseComplete)
	eventually(t, "w2's NodeHooks deleted", func() error {
		nhs, err := nodeHooks(ctx, cl, "iscsi")
		if err == nil && (nhs["w2"] != nil || len(nhs) != 2) {
			err = fmt.Errorf("NodeHooks of %v", slices.Sorted(maps.Keys(nhs)))
		}
		return err
	})
}

// deleteAfterAgents: deleting the HostHooks hh waits for the agents: it is
// there while w1 and w4 have the hooks, and gone once they removed them.
func deleteAfterAgents(t *testing.T, cl client.Client, hh *v1alpha1.HostHooks, h2 string) {
	t.Helper()
	ctx := t.Context()
	if err := cl.Delete(ctx, hh); err != nil {
		t.Fatal(err)
	}
	report(t, cl, "iscsi", "w1", v1alpha1.NodeHooksStatus{Phase: v1alpha1.NodeRemoved, AppliedHash: h2})
	never(t, "the HostHooks going while w4 has its hooks", func() error {
		hh, err := getHostHooks(ctx, cl, "iscsi")
		if err != nil {
			return err
		}
		if hh.DeletionTimestamp == nil || !slices.Contains(hh.Finalizers, v1alpha1.Finalizer) {
			return fmt.Errorf("deletion %v, finalizers %v", hh.DeletionTimestamp, hh.Finalizers)
		}
		return nil
	})
	if a, err := approved(ctx, cl, "iscsi", h2); err != nil || len(a) != 2 {
		t.Errorf("approved while deleting: %v, %v", a, err)
	}
	report(t, cl, "iscsi", "w4", v1alpha1.NodeHooksStatus{Phase: v1alpha1.NodeRemoved, AppliedHash: h2})
	eventually(t, "the HostHooks gone", func() error {
		_, err := getHostHooks(ctx, cl, "iscsi")
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err == nil {
			err = errors.New("still there")
		}
		return err
	})
}

// checkRequests checks what TestController's controller cost: every read
// came from the watches, and each approval was one patch: w1 and w2 for
// the first hooks, w1 to w4 for the second, and the removal from w3.
func checkRequests(t *testing.T, reqs *requests) {
	t.Helper()
	t.Logf("the controller's requests:\n%s", reqs)
	for _, key := range []string{"GET /apis/hostprov.dev/v1alpha1/nodehooks/NAME", "GET /api/v1/nodes/NAME", "GET /apis/hostprov.dev/v1alpha1/hosthooks/NAME", "PUT /apis/hostprov.dev/v1alpha1/nodehooks/NAME"} {
		if n := reqs.count(key); n != 0 {
			t.Errorf("%d requests %s", n, key)
		}
	}
	// One list of each kind, for its one informer (nodes whole, for
	// their Ready condition: the cache keeps little of them).
	for _, key := range []string{"GET /apis/hostprov.dev/v1alpha1/nodehooks", "GET /apis/hostprov.dev/v1alpha1/hosthooks", "GET /api/v1/nodes"} {
		if n := reqs.count(key); n != 1 {
			t.Errorf("%d requests %s, want 1", n, key)
		}
	}
	if n := reqs.count("GET /api/v1/nodes (metadata)"); n != 0 {
		t.Errorf("%d lists of nodes' metadata besides the nodes", n)
	}
	if n := reqs.count("PATCH /apis/hostprov.dev/v1alpha1/nodehooks/NAME"); n != 7 {
		t.Errorf("%d patches of NodeHooks for 6 approvals and a removal", n)
	}
	if n := reqs.count("DELETE /apis/hostprov.dev/v1alpha1/nodehooks/NAME"); n != 2 {
		t.Errorf("%d deletes of NodeHooks, want 2 (w3's and w2's)", n)
	}
}

// testLogHandler logs to t, until it ends: the manager may log as it
// stops, after the test's last word.
func testLogHandler(t *testing.T) slog.Handler {
	w := kubetest.NewLogWriter(t, "")
	t.Cleanup(w.Stop)
	return slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo})
}

func toJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func equalJSON(a, b any) bool { return toJSON(a) == toJSON(b) }

func condition(hh *v1alpha1.HostHooks, typ string) metav1.Condition {
	for _, c := range hh.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

// TestControllerLeaderElection runs two controllers: only the one holding
// the Lease acts, and the other takes over when it stops.
func TestControllerLeaderElection(t *testing.T) {
	c, cl := startCluster(t)
	ctx := t.Context()
	const ns = "hostprov-system"
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	// The lease lasts as long as by default, so that a loaded machine
	// does not make the leader miss a renewal; a stopped leader gives it
	// up, and the other, trying often, takes over at once.
	opts := controller.Options{
		Namespace: ns, LeaderElection: true,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 250 * time.Millisecond,
	}
	// Each controller's writes carry its name as their field manager.
	cfgA, cfgB := c.Config(), c.Config()
	cfgA.UserAgent, cfgB.UserAgent = "controller-a", "controller-b"
	a, stopA := startController(t, cfgA, opts)
	select {
	case <-a.Elected():
	case <-time.After(waitFor):
		t.Fatal("controller a was not elected")
	}
	b, _ := startController(t, cfgB, opts)

	createNode(t, cl, "n1", nil)
	hooks := []v1alpha1.Hook{{Name: "hello", Exec: []string{"/bin/echo", "hello"}}}
	if err := cl.Create(ctx, &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "hello"}, Spec: v1alpha1.HostHooksSpec{Hooks: hooks}}); err != nil {
		t.Fatal(err)
	}
	h := v1alpha1.HooksHash(hooks)
	eventually(t, "approval of n1", approvedAre(ctx, cl, "hello", h, "n1"))
	report(t, cl, "hello", "n1", succeeded(h))
	statusIs(t, cl, "hello", 1, 1, 1, 0, v1alpha1.PhaseComplete)
	select {
	case <-b.Elected():
		t.Fatal("controller b was elected while a holds the lease")
	default:
	}
	hh, err := getHostHooks(ctx, cl, "hello")
	if err != nil {
		t.Fatal(err)
	}
	nhs, err := nodeHooks(ctx, cl, "hello")
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{hh, nhs["n1"]} {
		if got := controllerManagers(obj); !slices.Equal(got, []string{"controller-a"}) {
			t.Errorf("%s was written by %v, want only controller-a", obj.GetName(), got)
		}
	}
	var lease coordinationv1.Lease
	if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: controller.LeaseName}, &lease); err != nil {
		t.Fatal(err)
	}
	holderA := *lease.Spec.HolderIdentity

	// a stops and gives the lease up; b takes over and acts.
	stopA()
	select {
	case <-b.Elected():
	case <-time.After(waitFor):
		t.Fatal("controller b was not elected after a stopped")
	}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: controller.LeaseName}, &lease); err != nil {
		t.Fatal(err)
	}
	if *lease.Spec.HolderIdentity == holderA {
		t.Errorf("the lease is still held by %s", holderA)
	}
	createNode(t, cl, "n2", nil)
	eventually(t, "approval of n2 by b", approvedAre(ctx, cl, "hello", h, "n1", "n2"))
	nhs, err = nodeHooks(ctx, cl, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if got := controllerManagers(nhs["n2"]); !slices.Equal(got, []string{"controller-b"}) {
		t.Errorf("n2's NodeHooks was written by %v, want only controller-b", got)
	}
}

// controllerManagers are the field managers of obj that are controllers,
// by the user agents TestControllerLeaderElection gives them.
func controllerManagers(obj client.Object) []string {
	var out []string
	for _, mf := range obj.GetManagedFields() {
		if strings.HasPrefix(mf.Manager, "controller-") && !slices.Contains(out, mf.Manager) {
			out = append(out, mf.Manager)
		}
	}
	slices.Sort(out)
	return out
}
