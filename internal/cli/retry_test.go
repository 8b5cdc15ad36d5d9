//go:build kube

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/internal/deploytest"
	"github.com/hostprov/hostprov/internal/kube"
	"github.com/hostprov/hostprov/internal/kube/agent"
	"github.com/hostprov/hostprov/internal/kube/controller"
	"github.com/hostprov/hostprov/internal/kubetest"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/apply/applytest"
)

// A hook that fails on the first node stops the rollout (failureThreshold
// 0: Degraded, the second node never approved). Once the cause is fixed on
// the node, hostprov retry starts the failed hook there exactly once more,
// changes no hash, and the rollout goes on to Complete. A retry of a
// rollout with no failed node starts nothing. Against a real API server,
// with the real controller and two agents over fake systemds.
func TestRetryCommand(t *testing.T) {
	r := startRetryRig(t)
	degraded := r.status("Degraded", func(s v1alpha1.HostHooksStatus) bool {
		return s.Phase == v1alpha1.PhaseDegraded && s.FailedNodes == 1
	})
	var nh2 v1alpha1.NodeHooks
	if err := r.cl.Get(r.ctx, client.ObjectKey{Name: v1alpha1.NodeHooksName(r.hh.Name, "n2")}, &nh2); err != nil {
		t.Fatal(err)
	}
	if nh2.Spec.HooksHash != "" || r.starts("n1") != 1 || r.starts("n2") != 0 {
		t.Fatalf("the rollout, stopped by n1's failure: n2 approved for %q, %s started %d times on n1 and %d on n2; want n2 not approved, once on n1",
			nh2.Spec.HooksHash, r.unit, r.starts("n1"), r.starts("n2"))
	}
	r.checkRetryFixed(degraded)
	r.checkRetryNothingFailed()
	r.checkRetryRoles()
	r.checkRetryProblems()
}

// retryRig is an API server with the controller and two agents, n1 and n2,
// over fake systemds, and a HostHooks whose hook fails on n1.
type retryRig struct {
	t      *testing.T
	ctx    context.Context
	c      *kubetest.Cluster
	cl     client.Client
	sds    map[string]*applytest.Fake
	agents map[string]*agent.Agent
	hh     *v1alpha1.HostHooks
	unit   string // the unit of hh's hook
}

func startRetryRig(t *testing.T) *retryRig {
	c, cl := startAPI(t)
	ctx := t.Context()
	run := func(f func(context.Context) error) {
		rctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- f(rctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("%v", err)
			}
		})
	}
	r := &retryRig{t: t, ctx: ctx, c: c, cl: cl, sds: map[string]*applytest.Fake{}, agents: map[string]*agent.Agent{}}
	for _, name := range []string{"n1", "n2"} {
		if err := cl.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
		opts := apply.Options{Root: t.TempDir()}
		if err := apply.PrepareDirs(opts); err != nil {
			t.Fatal(err)
		}
		sd := applytest.New()
		a, err := agent.New(agent.Config{NodeName: name, REST: c.Config(), Options: opts,
			Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
			Connect: func(context.Context) (*agent.Systemd, error) { return &agent.Systemd{Systemd: sd}, nil }})
		if err != nil {
			t.Fatal(err)
		}
		r.sds[name], r.agents[name] = sd, a
		run(a.Run)
	}
	mgr, err := controller.NewManager(c.Config(), controller.Options{Logger: logr.Discard(), MetricsAddr: "0", HealthAddr: "0"})
	if err != nil {
		t.Fatal(err)
	}
	run(mgr.Start)

	r.hh = &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "flaky"}, Spec: v1alpha1.HostHooksSpec{
		Hooks: []v1alpha1.Hook{{Name: "flaky-svc", Exec: []string{"/bin/sleep", "infinity"}}}}}
	set, _ := kube.Build(r.hh)
	r.unit = set.Units[0].Name
	r.sds["n1"].FailOn("start", r.unit, errors.New("job failed: exit-code"))
	if err := cl.Create(ctx, r.hh); err != nil {
		t.Fatal(err)
	}
	return r
}

// starts counts the starts and restarts of the hook's unit on node.
func (r *retryRig) starts(node string) int {
	n := 0
	for _, call := range r.sds[node].Calls() {
		if (call.Method == "start" || call.Method == "restart") && slices.Contains(call.Units, r.unit) {
			n++
		}
	}
	return n
}

// status waits for the HostHooks' status to be what (ok), and returns it.
func (r *retryRig) status(what string, ok func(v1alpha1.HostHooksStatus) bool) v1alpha1.HostHooksStatus {
	r.t.Helper()
	var got v1alpha1.HostHooks
	err := wait.PollUntilContextTimeout(r.ctx, 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := r.cl.Get(ctx, client.ObjectKeyFromObject(r.hh), &got); err != nil {
			return false, err
		}
		return got.Status.ObservedGeneration == got.Generation && ok(got.Status), nil
	})
	if err != nil {
		r.t.Fatalf("HostHooks not %s: %v; status %+v", what, err, got.Status)
	}
	return got.Status
}

// checkRetryFixed: fixed on the node, retried from the cluster, the failed
// hook starts once more on n1, and the rollout completes with the same hash.
func (r *retryRig) checkRetryFixed(degraded v1alpha1.HostHooksStatus) {
	t, hh, unit := r.t, r.hh, r.unit
	r.sds["n1"].FailOn("start", unit, nil)
	var stdout, stderr strings.Builder
	if code := Run([]string{"retry", hh.Name, "--kubeconfig", r.c.Kubeconfig(t), "-o", "json"}, strings.NewReader(""), &stdout, &stderr); code != ExitOK {
		t.Fatalf("hostprov retry exited %d: %s", code, stderr.String())
	}
	var res retryResult
	if err := json.Unmarshal([]byte(stdout.String()), &res); err != nil {
		t.Fatalf("hostprov retry -o json: %v: %s", err, stdout.String())
	}
	if want := (retryResult{HostHooks: hh.Name, Retry: 1, Previous: 0, FailedNodes: 1}); res != want {
		t.Errorf("hostprov retry -o json: %+v, want %+v", res, want)
	}
	complete := r.status("Complete", func(s v1alpha1.HostHooksStatus) bool {
		return s.Phase == v1alpha1.PhaseComplete && s.SucceededNodes == 2 && s.FailedNodes == 0
	})
	if complete.HooksHash != degraded.HooksHash {
		t.Errorf("the retry changed the hooks' hash: %s, was %s", complete.HooksHash, degraded.HooksHash)
	}
	if n1, n2 := r.starts("n1"), r.starts("n2"); n1 != 2 || n2 != 1 {
		t.Errorf("after the retry: %s started %d times on n1 and %d on n2; want twice and once: n1's calls %q", unit, n1, n2, r.sds["n1"].Log())
	}
	var nh1 v1alpha1.NodeHooks
	if err := r.cl.Get(r.ctx, client.ObjectKey{Name: v1alpha1.NodeHooksName(hh.Name, "n1")}, &nh1); err != nil {
		t.Fatal(err)
	}
	if nh1.Status.Phase != v1alpha1.NodeSucceeded || nh1.Status.Retry != 1 {
		t.Errorf("n1's NodeHooks after the retry: phase %s, retry %d; want Succeeded, 1", nh1.Status.Phase, nh1.Status.Retry)
	}
	var got v1alpha1.HostHooks
	if err := r.cl.Get(r.ctx, client.ObjectKeyFromObject(hh), &got); err != nil {
		t.Fatal(err)
	}
	for _, mf := range got.ManagedFields {
		if strings.Contains(string(mf.FieldsV1.Raw), `"f:retry"`) && mf.Manager != retryUserAgent {
			t.Errorf("spec.retry written by %q, want %q", mf.Manager, retryUserAgent)
		}
	}
}

// checkRetryNothingFailed: with nothing failed, a retry says so, and no
// node starts anything.
func (r *retryRig) checkRetryNothingFailed() {
	t := r.t
	before := map[string]agent.Stats{"n1": r.agents["n1"].Stats(), "n2": r.agents["n2"].Stats()}
	var stdout, stderr strings.Builder
	if code := Run([]string{"retry", r.hh.Name, "--kubeconfig", r.c.Kubeconfig(t)}, strings.NewReader(""), &stdout, &stderr); code != ExitOK {
		t.Fatalf("hostprov retry exited %d: %s", code, stderr.String())
	}
	if out := stdout.String(); !strings.Contains(out, "hosthooks/flaky: spec.retry 2 (was 1)") || !strings.Contains(out, "no node failed") {
		t.Errorf("hostprov retry of a complete rollout says %q", out)
	}
	for name, a := range r.agents {
		if err := wait.PollUntilContextTimeout(r.ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return a.Stats().Syncs > before[name].Syncs, nil
		}); err != nil {
			t.Fatalf("%s's agent did not sync after the second retry: %v", name, err)
		}
	}
	if n1, n2 := r.starts("n1"), r.starts("n2"); n1 != 2 || n2 != 1 {
		t.Errorf("a retry with no failed node started %s: %d times on n1, %d on n2 in all", r.unit, n1, n2)
	}
}

// checkRetryRoles: with the roles of deploy/rbac-users.yaml, the author's
// lets retry through, the viewer's is refused with the role that would do.
func (r *retryRig) checkRetryRoles() {
	t, ctx, cl, c, hh := r.t, r.ctx, r.cl, r.c, r.hh
	_, objs, err := deploytest.Load("../../deploy")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.File != "rbac-users.yaml" {
			continue
		}
		o.Obj.SetManagedFields(nil)
		if err := cl.Patch(ctx, o.Obj, client.Apply, client.FieldOwner("test"), client.ForceOwnership); err != nil {
			t.Fatalf("applying %s: %v", o, err)
		}
	}
	as := func(user, role string) *rest.Config {
		if err := cl.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "test-" + user},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}); err != nil {
			t.Fatal(err)
		}
		cfg := c.Config()
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		return cfg
	}
	author, viewer := as("alice", "hostprov-hosthooks-author"), as("bob", "hostprov-hosthooks-viewer")
	// RBAC takes a moment to see a new binding.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		res, err := retryHostHooks(ctx, author, hh.Name)
		if err != nil && strings.Contains(err.Error(), "forbidden") {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return res.Retry == 3, nil
	}); err != nil {
		t.Errorf("hostprov retry as hostprov-hosthooks-author: %v", err)
	}
	if _, err := retryHostHooks(ctx, viewer, hh.Name); err == nil || !strings.Contains(err.Error(), "hostprov-hosthooks-author") {
		t.Errorf("hostprov retry as hostprov-hosthooks-viewer: %v; want refused, naming the role that may", err)
	}
}

// checkRetryProblems: problems are said as such.
func (r *retryRig) checkRetryProblems() {
	t, ctx, cl, c, hh := r.t, r.ctx, r.cl, r.c, r.hh
	var stderr strings.Builder
	stderr.Reset()
	if code := Run([]string{"retry", "nope", "--kubeconfig", c.Kubeconfig(t)}, strings.NewReader(""), io.Discard, &stderr); code != ExitFailure ||
		!strings.Contains(stderr.String(), "no HostHooks nope") {
		t.Errorf("hostprov retry of a HostHooks that is not there: exit %d, %q", code, stderr.String())
	}
	stderr.Reset()
	if code := Run([]string{"retry", "--kubeconfig", c.Kubeconfig(t)}, strings.NewReader(""), io.Discard, &stderr); code != ExitInvalid ||
		!strings.Contains(stderr.String(), "give the name of one HostHooks") {
		t.Errorf("hostprov retry without a name: exit %d, %q", code, stderr.String())
	}
	// The API server keeps spec.retry non-negative.
	err := cl.Patch(ctx, &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: hh.Name}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"retry":-1}}`)))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.retry") {
		t.Errorf("a negative spec.retry: %v; want refused as invalid at spec.retry", err)
	}
}
