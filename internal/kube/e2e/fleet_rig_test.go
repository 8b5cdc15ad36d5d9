// Package e2e tests hostprov on Kubernetes as a whole: a real API server
// and etcd (internal/kubetest), the controller, and three nodes, each a
// real systemd (internal/systemdtest) with its own agent, as the DaemonSet runs
// it: authenticated with a service account token bound to a pod on its
// node.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/hostprov/hostprov/internal/kube/agent"
	"github.com/hostprov/hostprov/internal/kube/controller"
	"github.com/hostprov/hostprov/internal/kubetest"
	"github.com/hostprov/hostprov/internal/systemdtest"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/apply"
)

func init() { ctrllog.SetLogger(logr.Discard()) }

const waitFor = 2 * time.Minute

// The identities of deploy/: the agents and the controller run with their
// service accounts' tokens, with the rights deploy/ gives them.
const (
	agentNamespace    = "hostprov-system"
	agentAccount      = "hostprov-agent"
	controllerAccount = "hostprov-controller"
)

// fleet is a cluster of three nodes with their agents and a controller.
type fleet struct {
	t     *testing.T
	c     *kubetest.Cluster
	cl    client.Client
	nodes map[string]*systemdtest.Rig
}

// The nodes: two workers with the iSCSI label and one other.
var nodeLabels = map[string]map[string]string{
	"node-1": {"node-role.kubernetes.io/worker": "", "storage": "iscsi"},
	"node-2": {"node-role.kubernetes.io/worker": "", "storage": "iscsi"},
	"node-3": {"node-role.kubernetes.io/worker": ""},
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	c := kubetest.Start(t)
	c.InstallCRDs(t, "../../../deploy/crds")
	f := &fleet{t: t, c: c, cl: c.Client(t), nodes: map[string]*systemdtest.Rig{}}
	f.installAgentRights()
	for name, ls := range nodeLabels {
		r := systemdtest.Start(t)
		if err := apply.PrepareDirs(apply.Options{Root: r.Root}); err != nil {
			t.Fatal(err)
		}
		f.nodes[name] = r
		cfg := c.NodeIdentity(t, agentNamespace, agentAccount, name)
		var n corev1.Node
		if err := f.cl.Get(t.Context(), client.ObjectKey{Name: name}, &n); err != nil {
			t.Fatal(err)
		}
		n.Labels = ls
		if err := f.cl.Update(t.Context(), &n); err != nil {
			t.Fatal(err)
		}
		f.startAgent(name, r, cfg)
	}
	// The controller's pod runs on a node of its own, outside the
	// selector.
	f.startController(c.NodeIdentity(t, agentNamespace, controllerAccount, "control-plane"))
	return f
}

// installAgentRights gives the agents' service account what the
// deployment gives it: read HostHooks, Nodes and NodeHooks, write only
// NodeHooks status.
func (f *fleet) installAgentRights() {
	f.t.Helper()
	applyManifests(f.t, f.cl, "../../../deploy", agentRights)
}

func (f *fleet) startAgent(node string, r *systemdtest.Rig, cfg *rest.Config) {
	f.t.Helper()
	lw := kubetest.NewLogWriter(f.t, node+": ")
	a, err := agent.New(agent.Config{NodeName: node, REST: cfg, Options: apply.Options{Root: r.Root},
		Log: slog.New(slog.NewTextHandler(lw, nil)),
		// As in its pod: the node's journal read by the node's systemd.
		Connect: func(ctx context.Context) (*agent.Systemd, error) {
			return agent.DialNode(ctx, r.Socket, apply.Options{Root: r.Root})
		}})
	if err != nil {
		f.t.Fatal(err)
	}
	run(f.t, lw, func(ctx context.Context) error { return a.Run(ctx) })
}

func (f *fleet) startController(cfg *rest.Config) {
	f.t.Helper()
	lw := kubetest.NewLogWriter(f.t, "controller: ")
	mgr, err := controller.NewManager(cfg, controller.Options{
		Logger: logr.FromSlogHandler(slog.NewTextHandler(lw, nil))})
	if err != nil {
		f.t.Fatal(err)
	}
	run(f.t, lw, mgr.Start)
}

// run runs f until the test ends; then it cancels its context and waits.
func run(t *testing.T, lw *kubetest.LogWriter, f func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	var once sync.Once
	t.Cleanup(func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("%s%v", lw.Prefix(), err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("%sdid not end within 30s of its context", lw.Prefix())
			}
			lw.Stop()
		})
	})
}

// iscsiHooks are the hooks of the test: one command hook whose steps
// count their runs in /var/lib/e2e/runs of the node, and fail on a node
// that has /etc/e2e-fail, with exit code 3 and a line of output. version
// changes the hooks (and so their hash) without changing what they do.
func iscsiHooks(version int) []v1alpha1.Hook {
	return []v1alpha1.Hook{{
		Name:        "install-iscsi",
		Description: fmt.Sprintf("iSCSI initiator, version %d of the test's hooks", version),
		Steps: []v1alpha1.Step{
			{Name: "install", Sh: "mkdir -p /var/lib/e2e\necho install >> /var/lib/e2e/runs\n"},
			{Name: "check", Sh: "if [ -e /etc/e2e-fail ]; then echo 'iscsid: no initiator name' >&2; exit 3; fi\n"},
		},
	}}
}

func hostHooks(version int) *v1alpha1.HostHooks {
	return &v1alpha1.HostHooks{
		ObjectMeta: metav1.ObjectMeta{Name: "iscsi"},
		Spec: v1alpha1.HostHooksSpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"storage": "iscsi"}},
			Rollout:      v1alpha1.Rollout{MaxUnavailable: new(intstr.FromInt32(1))},
			Hooks:        iscsiHooks(version),
		},
	}
}

// TestFleetRigs is the whole of hostprov on Kubernetes against a real
// control plane and three real systemds: a HostHooks selecting two of the
// nodes installs, runs and reports on exactly those; a failing step on one
// shows in the aggregate with its exit code and node; a change rolls out
// one node at a time under maxUnavailable: 1 and stops at the failure
// threshold; deleting the HostHooks prunes the units on both nodes.
func TestFleetRigs(t *testing.T) {
	f := newFleet(t)
	ctx := t.Context()
	w := f.watchRollout()

	// 1. Installed, run once and reported on exactly the selected nodes.
	hh := hostHooks(1)
	if err := f.cl.Create(ctx, hh); err != nil {
		t.Fatal(err)
	}
	st := f.waitStatus("complete on both selected nodes", func(s v1alpha1.HostHooksStatus) bool {
		return s.Phase == v1alpha1.PhaseComplete && s.MatchedNodes == 2 && s.SucceededNodes == 2
	})
	if st.UpdatedNodes != 2 || st.FailedNodes != 0 || len(st.Errors) != 0 {
		t.Errorf("status: %s", asJSON(st))
	}
	for _, n := range []string{"node-1", "node-2"} {
		f.checkInstalled(n, true)
		if got := f.runs(n); got != 1 {
			t.Errorf("%s: the steps ran %d times, want once", n, got)
		}
		nh := f.nodeHooks(n)
		if nh.Status.Phase != v1alpha1.NodeSucceeded || len(nh.Status.Hooks) != 1 || len(nh.Status.Hooks[0].Steps) != 2 {
			t.Errorf("%s: NodeHooks status: %s", n, asJSON(nh.Status))
		}
		for _, s := range nh.Status.Hooks[0].Steps {
			if s.State != "succeeded" || s.ExitCode == nil || *s.ExitCode != 0 {
				t.Errorf("%s: step %s: %s", n, s.Name, asJSON(s))
			}
		}
	}
	f.checkInstalled("node-3", false)
	if err := f.cl.Get(ctx, client.ObjectKey{Name: v1alpha1.NodeHooksName("iscsi", "node-3")}, &v1alpha1.NodeHooks{}); !apierrors.IsNotFound(err) {
		t.Errorf("node-3 is not selected, yet has a NodeHooks (or: %v)", err)
	}

	// 2. A change whose step fails on node-1, the first in the rollout's
	// order: node-1 fails and the rollout stops there (threshold 0), so
	// node-2 keeps the hooks it has.
	if err := os.WriteFile(filepath.Join(f.nodes["node-1"].Root, "etc/e2e-fail"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f.update(func(hh *v1alpha1.HostHooks) { hh.Spec.Hooks = iscsiHooks(2) })
	h2 := v1alpha1.HooksHash(iscsiHooks(2))
	st = f.waitStatus("degraded by node-1", func(s v1alpha1.HostHooksStatus) bool {
		return s.HooksHash == h2 && s.Phase == v1alpha1.PhaseDegraded && s.FailedNodes == 1
	})
	if len(st.Errors) != 1 {
		t.Fatalf("errors: %s", asJSON(st.Errors))
	}
	e := st.Errors[0]
	if e.Hook != "install-iscsi" || e.Step != "check" || e.Count != 1 || strings.Join(e.Nodes, ",") != "node-1" ||
		e.ExitCode == nil || *e.ExitCode != 3 {
		t.Errorf("error summary: %s", asJSON(e))
	}
	if !strings.Contains(asJSON(f.nodeHooks("node-1").Status), "iscsid: no initiator name") {
		t.Errorf("node-1's NodeHooks lacks the failed step's output: %s", asJSON(f.nodeHooks("node-1").Status))
	}
	if nh := f.nodeHooks("node-2"); nh.Spec.HooksHash == h2 || nh.Status.AppliedHash == h2 {
		t.Errorf("node-2 was approved past the failure threshold: %s", asJSON(nh))
	}
	if st.UpdatedNodes != 1 || st.SucceededNodes != 0 {
		t.Errorf("status: %s", asJSON(st))
	}

	// 3. Fixed on the node, changed again: the new hooks roll out to
	// node-1, then node-2, one at a time.
	if err := os.Remove(filepath.Join(f.nodes["node-1"].Root, "etc/e2e-fail")); err != nil {
		t.Fatal(err)
	}
	f.update(func(hh *v1alpha1.HostHooks) { hh.Spec.Hooks = iscsiHooks(3) })
	h3 := v1alpha1.HooksHash(iscsiHooks(3))
	f.waitStatus("complete again", func(s v1alpha1.HostHooksStatus) bool {
		return s.HooksHash == h3 && s.Phase == v1alpha1.PhaseComplete && s.SucceededNodes == 2
	})
	order := w.approvals(h3)
	if strings.Join(order, ",") != "node-1,node-2" {
		t.Errorf("approvals of the third hooks: %v, want node-1 then node-2; events:\n%s", order, w.log())
	}
	t.Logf("NodeHooks seen:\n%s", w.log())
	if max := w.maxUnavailable(); max > 1 {
		t.Errorf("%d nodes were unavailable at once under maxUnavailable: 1:\n%s", max, w.log())
	}
	f.checkInstalled("node-3", false)

	// 4. Deleted: pruned on both nodes, then gone with its NodeHooks.
	if err := f.cl.Delete(ctx, &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "iscsi"}}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitFor, true, func(ctx context.Context) (bool, error) {
		err := f.cl.Get(ctx, client.ObjectKey{Name: "iscsi"}, &v1alpha1.HostHooks{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("the HostHooks is not gone: %v", err)
	}
	for _, n := range []string{"node-1", "node-2"} {
		f.checkInstalled(n, false)
	}
}

// update changes the HostHooks, retrying on a conflict with the
// controller's writes.
func (f *fleet) update(change func(*v1alpha1.HostHooks)) {
	f.t.Helper()
	err := wait.PollUntilContextTimeout(f.t.Context(), 50*time.Millisecond, waitFor, true, func(ctx context.Context) (bool, error) {
		var hh v1alpha1.HostHooks
		if err := f.cl.Get(ctx, client.ObjectKey{Name: "iscsi"}, &hh); err != nil {
			return false, err
		}
		change(&hh)
		err := f.cl.Update(ctx, &hh)
		return err == nil, client.IgnoreAlreadyExists(ignoreConflict(err))
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

func ignoreConflict(err error) error {
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// waitStatus waits until the HostHooks' status, for its current
// generation, satisfies ok.
func (f *fleet) waitStatus(what string, ok func(v1alpha1.HostHooksStatus) bool) v1alpha1.HostHooksStatus {
	f.t.Helper()
	var hh v1alpha1.HostHooks
	err := wait.PollUntilContextTimeout(f.t.Context(), 100*time.Millisecond, waitFor, true, func(ctx context.Context) (bool, error) {
		if err := f.cl.Get(ctx, client.ObjectKey{Name: "iscsi"}, &hh); err != nil {
			return false, err
		}
		return hh.Status.ObservedGeneration == hh.Generation && ok(hh.Status), nil
	})
	if err != nil {
		f.t.Fatalf("HostHooks iscsi: %s: %v; status:\n%s", what, err, asJSON(hh.Status))
	}
	return hh.Status
}

func (f *fleet) nodeHooks(node string) *v1alpha1.NodeHooks {
	f.t.Helper()
	var nh v1alpha1.NodeHooks
	if err := f.cl.Get(f.t.Context(), client.ObjectKey{Name: v1alpha1.NodeHooksName("iscsi", node)}, &nh); err != nil {
		f.t.Fatal(err)
	}
	return &nh
}

// checkInstalled checks the node's unit file and its state: the set of
// the HostHooks with its unit, or none of it.
func (f *fleet) checkInstalled(node string, want bool) {
	f.t.Helper()
	r := f.nodes[node]
	_, err := os.Stat(filepath.Join(r.UnitDir, "install-iscsi.service"))
	if has := err == nil; has != want {
		f.t.Errorf("%s: install-iscsi.service installed: %v, want %v", node, has, want)
	}
	st, err := apply.LoadState(apply.StatePath(apply.Options{Root: r.Root}.StateDirPath()))
	if err != nil {
		f.t.Fatal(err)
	}
	var sets []string
	for _, u := range st.Units {
		sets = append(sets, u.Set+"/"+u.Name)
	}
	if has := strings.Contains(strings.Join(sets, " "), "hosthooks.iscsi/install-iscsi.service"); has != want {
		f.t.Errorf("%s: the state has the set's unit: %v, want %v (units: %v)", node, has, want, sets)
	}
}

// runs counts the runs of the install step on a node.
func (f *fleet) runs(node string) int {
	f.t.Helper()
	data, err := os.ReadFile(filepath.Join(f.nodes[node].Root, "var/lib/e2e/runs"))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

func asJSON(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}
