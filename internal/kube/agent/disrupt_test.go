package agent

// Drains for hooks that declare a disruption, against a real API server.
// There is no kubelet and no disruption controller: the test plays both,
// deleting the pods that an eviction left terminating and setting what a
// PodDisruptionBudget allows.

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/internal/kubetest"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/apply/applytest"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// drainCluster is an API server with one node, its agent and its fake
// systemd.
type drainCluster struct {
	t    *testing.T
	c    *kubetest.Cluster
	cl   client.Client
	node *corev1.Node
	sd   *applytest.Fake
	root string // the node's root, kept across agents
}

func startDrainCluster(t *testing.T, node *corev1.Node, drainTimeout time.Duration) *drainCluster {
	t.Helper()
	c := kubetest.Start(t)
	c.InstallCRDs(t, "../../../deploy/crds")
	cl := c.Client(t)
	ctx := t.Context()
	if err := cl.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	// The pods' service account, which the controller manager, not
	// running here, would make.
	if err := cl.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "default"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	k := &drainCluster{t: t, c: c, cl: cl, node: node, sd: applytest.New(), root: t.TempDir()}
	kctx, stopKubelet := context.WithCancel(context.Background())
	kubelet := make(chan struct{})
	go func() { defer close(kubelet); k.kubelet(kctx) }()
	t.Cleanup(func() {
		stopKubelet()
		<-kubelet
	})
	if drainTimeout >= 0 {
		k.startAgent(func(cfg *Config) { cfg.DrainTimeout = drainTimeout })
	}
	return k
}

// startAgent starts an agent of the node, with its Config as set; the
// returned function stops it (and so does the end of the test).
func (k *drainCluster) startAgent(set func(*Config)) (stop func()) {
	k.t.Helper()
	cfg := Config{NodeName: k.node.Name, REST: k.c.Config(), Options: apply.Options{Root: k.root},
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Connect: func(context.Context) (*Systemd, error) { return &Systemd{Systemd: k.sd}, nil }}
	set(&cfg)
	a, err := New(cfg)
	if err != nil {
		k.t.Fatal(err)
	}
	return runAgent(k.t, a)
}

// kubelet plays the kubelets: a pod that is terminating is deleted for
// good, as a kubelet does once its containers stopped.
func (k *drainCluster) kubelet(ctx context.Context) {
	for ctx.Err() == nil {
		var pods corev1.PodList
		if err := k.cl.List(ctx, &pods); err == nil {
			for i := range pods.Items {
				if p := &pods.Items[i]; p.DeletionTimestamp != nil {
					k.cl.Delete(ctx, p, client.GracePeriodSeconds(0))
				}
			}
		}
		sleep(ctx, 50*time.Millisecond)
	}
}

// pod makes a running pod bound to node, with the labels given.
func (k *drainCluster) pod(name, node string, ls map[string]string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	k.t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: ls},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}}}}
	for _, m := range mutate {
		m(p)
	}
	if err := k.cl.Create(k.t.Context(), p); err != nil {
		k.t.Fatal(err)
	}
	// Running and ready, as its kubelet would say: the Eviction API lets
	// a pending pod go whatever its budget says.
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if err := k.cl.Status().Update(k.t.Context(), p); err != nil {
		k.t.Fatal(err)
	}
	return p
}

// exists reports whether the pod is there and not terminating.
func (k *drainCluster) exists(p *corev1.Pod) bool {
	k.t.Helper()
	var got corev1.Pod
	err := k.cl.Get(k.t.Context(), client.ObjectKeyFromObject(p), &got)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		k.t.Fatal(err)
	}
	return got.DeletionTimestamp == nil
}

// hooks creates a HostHooks of hs and its NodeHooks, approved.
func (k *drainCluster) hooks(name string, hs ...v1alpha1.Hook) (*v1alpha1.HostHooks, *v1alpha1.NodeHooks) {
	k.t.Helper()
	hh := &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.HostHooksSpec{Hooks: hs}}
	return hh, createHooks(k.t, k.cl, hh, k.node.Name)
}

// until waits for ok, failing the test with what() after 30s.
func (k *drainCluster) until(what func() string, ok func() bool) {
	k.t.Helper()
	err := wait.PollUntilContextTimeout(k.t.Context(), 20*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return ok(), nil })
	if err != nil {
		k.t.Fatalf("%v: %s", err, what())
	}
}

func (k *drainCluster) nodeNow() *corev1.Node {
	k.t.Helper()
	var n corev1.Node
	if err := k.cl.Get(k.t.Context(), client.ObjectKeyFromObject(k.node), &n); err != nil {
		k.t.Fatal(err)
	}
	return &n
}

func (k *drainCluster) nodeHooksNow(nh *v1alpha1.NodeHooks) *v1alpha1.NodeHooks {
	k.t.Helper()
	var got v1alpha1.NodeHooks
	if err := k.cl.Get(k.t.Context(), client.ObjectKeyFromObject(nh), &got); err != nil {
		k.t.Fatal(err)
	}
	return &got
}

func (k *drainCluster) waitPhase(nh *v1alpha1.NodeHooks, phase v1alpha1.NodePhase) *v1alpha1.NodeHooks {
	k.t.Helper()
	var got *v1alpha1.NodeHooks
	k.until(func() string { return "NodeHooks not " + string(phase) + ": " + statusJSON(got) },
		func() bool { got = k.nodeHooksNow(nh); return got.Status.Phase == phase })
	return got
}

// allow plays the disruption controller: the budget allows n disruptions.
func (k *drainCluster) allow(pdb *policyv1.PodDisruptionBudget, n int32) {
	k.t.Helper()
	err := wait.PollUntilContextTimeout(k.t.Context(), 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := k.cl.Get(ctx, client.ObjectKeyFromObject(pdb), pdb); err != nil {
			return false, err
		}
		pdb.Status.ObservedGeneration = pdb.Generation
		pdb.Status.DisruptionsAllowed = n
		pdb.Status.CurrentHealthy, pdb.Status.DesiredHealthy, pdb.Status.ExpectedPods = 1+n, 1, 1+n
		err := k.cl.Status().Update(ctx, pdb)
		return err == nil, client.IgnoreAlreadyExists(ignoreConflict(err))
	})
	if err != nil {
		k.t.Fatal(err)
	}
}

func ignoreConflict(err error) error {
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}

func drainHook(name, disruption string) v1alpha1.Hook {
	h := service(name)
	h.Disruption = disruption
	return h
}

// A hook that needs a drain is applied on a cordoned, drained node: the
// node's pods are evicted, as a PodDisruptionBudget allows (one of two at
// first, the other once the budget allows it), but a DaemonSet's pod and
// a static pod's mirror, and the pods of other nodes; only then is the
// hook started, and the node uncordoned after.
func TestKubeAgentDrainHonoursBudget(t *testing.T) {
	t.Parallel()
	k := startDrainCluster(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-drain"}}, 0)
	ctx := t.Context()
	web := map[string]string{"app": "web"}
	a := k.pod("web-a", k.node.Name, web)
	b := k.pod("web-b", k.node.Name, web)
	ds := k.pod("agent-ds", k.node.Name, nil, func(p *corev1.Pod) {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds-uid", Controller: &yes}}
	})
	mirror := k.pod("static-node-drain", k.node.Name, nil, func(p *corev1.Pod) {
		p.Annotations = map[string]string{mirrorAnnotation: "hash"}
	})
	other := k.pod("web-other", "node-other", web)
	minAvailable := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: web}}}
	if err := k.cl.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	k.allow(pdb, 1)

	hh, nh := k.hooks("kernel", drainHook("kernel-tune", hooks.DisruptionDrain))
	unit := unitOf(t, hh, 0)
	// One of the two web pods goes; the other is held by the budget.
	var gone, held *corev1.Pod
	k.until(func() string { return "no web pod evicted" }, func() bool {
		switch {
		case !k.exists(a):
			gone, held = a, b
		case !k.exists(b):
			gone, held = b, a
		}
		return gone != nil
	})
	if n := k.nodeNow(); !n.Spec.Unschedulable || n.Annotations[AnnotationCordoned] == "" {
		t.Errorf("the node is draining but not cordoned by the agent: unschedulable %v, annotations %v", n.Spec.Unschedulable, n.Annotations)
	}
	time.Sleep(1500 * time.Millisecond) // a retry of the refused eviction
	if !k.exists(held) {
		t.Fatalf("%s evicted although the budget allowed one disruption, and %s was evicted", held.Name, gone.Name)
	}
	if k.sd.Active(unit) {
		t.Fatalf("%s started before the node was drained: %q", unit, k.sd.Log())
	}
	// The budget allows another disruption (a web pod came up on
	// another node): the drain finishes, the hook is applied.
	k.allow(pdb, 1)
	k.waitPhase(nh, v1alpha1.NodeSucceeded)
	if k.exists(held) {
		t.Errorf("%s not evicted", held.Name)
	}
	if !k.sd.Active(unit) {
		t.Errorf("%s not started: %q", unit, k.sd.Log())
	}
	for _, p := range []*corev1.Pod{ds, mirror, other} {
		if !k.exists(p) {
			t.Errorf("%s was evicted; a drain leaves DaemonSet pods, mirror pods and other nodes' pods", p.Name)
		}
	}
	k.until(func() string { n := k.nodeNow(); return "the node is still cordoned: " + n.String() }, func() bool {
		n := k.nodeNow()
		_, marked := n.Annotations[AnnotationCordoned]
		return !n.Spec.Unschedulable && !marked
	})
}

// A node that an administrator cordoned stays cordoned after a drain for a
// hook; a hook that declares no disruption cordons and evicts nothing.
func TestKubeAgentDrainKeepsAdminCordon(t *testing.T) {
	t.Parallel()
	k := startDrainCluster(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-admin"},
		Spec: corev1.NodeSpec{Unschedulable: true}}, 0)
	p := k.pod("app", k.node.Name, nil)
	_, nh := k.hooks("plain", service("plain-svc"))
	k.waitPhase(nh, v1alpha1.NodeSucceeded)
	if !k.exists(p) {
		t.Fatalf("a hook without a disruption evicted %s", p.Name)
	}
	if n := k.nodeNow(); n.Annotations[AnnotationCordoned] != "" {
		t.Fatalf("a hook without a disruption marked the node: %v", n.Annotations)
	}
	hh, nh := k.hooks("runtime", drainHook("runtime-cfg", hooks.DisruptionDrain))
	k.waitPhase(nh, v1alpha1.NodeSucceeded)
	if k.exists(p) {
		t.Errorf("%s not evicted for a hook that needs a drain", p.Name)
	}
	if u := unitOf(t, hh, 0); !k.sd.Active(u) {
		t.Errorf("%s not started: %q", u, k.sd.Log())
	}
	if n := k.nodeNow(); !n.Spec.Unschedulable || n.Annotations[AnnotationCordoned] != "" {
		t.Errorf("the administrator's cordon: unschedulable %v, annotations %v; want it cordoned, unmarked", n.Spec.Unschedulable, n.Annotations)
	}
}

// A drain that a budget blocks past the drain timeout applies nothing of
// the hook that needs it, reports the pod that stayed, uncordons the node,
// and is tried again: once the budget allows it, the hook is applied. A
// hook without a disruption in another HostHooks is applied meanwhile.
func TestKubeAgentDrainTimeout(t *testing.T) {
	t.Parallel()
	k := startDrainCluster(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-timeout"}}, 2*time.Second)
	ctx := t.Context()
	db := map[string]string{"app": "db"}
	p := k.pod("db-0", k.node.Name, db)
	minAvailable := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: db}}}
	if err := k.cl.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	k.allow(pdb, 0)
	plain, _ := k.hooks("plain", service("plain-svc"))
	hh, nh := k.hooks("kernel", drainHook("kernel-tune", hooks.DisruptionDrain))
	got := k.waitPhase(nh, v1alpha1.NodeFailed)
	if !strings.Contains(got.Status.Message, "default/db-0: eviction refused") || !strings.Contains(got.Status.Message, "kernel/kernel-tune") {
		t.Errorf("message %q, want the hook and the pod that stayed", got.Status.Message)
	}
	if u := unitOf(t, hh, 0); k.sd.Active(u) {
		t.Errorf("%s started on a node that was not drained", u)
	}
	k.until(func() string { return "the other HostHooks' hook not started: " + strings.Join(k.sd.Log(), "; ") },
		func() bool { return k.sd.Active(unitOf(t, plain, 0)) })
	k.until(func() string { return "the node still cordoned after the drain gave up" }, func() bool {
		n := k.nodeNow()
		return !n.Spec.Unschedulable && n.Annotations[AnnotationCordoned] == ""
	})
	if !k.exists(p) {
		t.Fatal("db-0 evicted although its budget allowed none")
	}
	k.allow(pdb, 1)
	k.waitPhase(nh, v1alpha1.NodeSucceeded)
	if k.exists(p) {
		t.Error("db-0 not evicted once its budget allowed it")
	}
}

// setReady plays the kubelet's report of the Node's Ready condition.
func (k *drainCluster) setReady(ready bool) {
	k.t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	err := wait.PollUntilContextTimeout(k.t.Context(), 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		n := k.nodeNow()
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, LastHeartbeatTime: metav1.Now()}}
		err := k.cl.Status().Update(ctx, n)
		return err == nil, ignoreConflict(err)
	})
	if err != nil {
		k.t.Fatal(err)
	}
}

func (k *drainCluster) lease(name string) *coordinationv1.Lease {
	k.t.Helper()
	var l coordinationv1.Lease
	err := k.cl.Get(k.t.Context(), client.ObjectKey{Namespace: "default", Name: name}, &l)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		k.t.Fatal(err)
	}
	return &l
}

// A hook that needs a reboot waits while another node holds its
// HostHooks' reboot lock; then the agent takes it, drains, applies and
// asks systemd to reboot, once, with the node cordoned. The agent that
// starts after the reboot (another boot ID) waits until the Node is
// Ready, then uncordons it, releases the lock and reports the hook
// applied, and reboots no more.
func TestKubeAgentReboot(t *testing.T) {
	t.Parallel()
	k := startDrainCluster(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-reboot"}}, -1)
	ctx := t.Context()
	k.setReady(true)
	p := k.pod("app", k.node.Name, nil)
	other := "node-first"
	held := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: LeasePrefix + "kernel"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &other}}
	if err := k.cl.Create(ctx, held); err != nil {
		t.Fatal(err)
	}
	var boot atomic.Value
	boot.Store("boot-1")
	reboots := make(chan string, 10)
	withReboot := func(cfg *Config) {
		cfg.LeaseNamespace = "default"
		cfg.BootID = func() (string, error) { return boot.Load().(string), nil }
		cfg.Connect = func(context.Context) (*Systemd, error) {
			return &Systemd{Systemd: k.sd, Reboot: func(context.Context) error {
				reboots <- boot.Load().(string)
				return nil
			}}, nil
		}
	}
	stop := k.startAgent(withReboot)
	hh, nh := k.hooks("kernel", drainHook("kernel-args", hooks.DisruptionReboot))
	unit := unitOf(t, hh, 0)
	got := k.waitPhase(nh, v1alpha1.NodePending)
	if !strings.Contains(got.Status.Message, "node node-first, which holds the reboot lock of HostHooks kernel") {
		t.Errorf("message %q, want the node that holds the lock", got.Status.Message)
	}
	if n := k.nodeNow(); n.Spec.Unschedulable || !k.exists(p) || k.sd.Active(unit) {
		t.Fatalf("waiting for the lock, the agent cordoned (%v), evicted (%v) or applied (%v)", n.Spec.Unschedulable, !k.exists(p), k.sd.Active(unit))
	}
	// node-first is back and releases the lock.
	if err := k.cl.Delete(ctx, held); err != nil {
		t.Fatal(err)
	}
	var asked string
	select {
	case asked = <-reboots:
	case <-time.After(60 * time.Second):
		t.Fatalf("no reboot; NodeHooks %s", statusJSON(k.nodeHooksNow(nh)))
	}
	if asked != "boot-1" {
		t.Errorf("reboot asked in boot %s", asked)
	}
	if k.exists(p) || !k.sd.Active(unit) {
		t.Errorf("before the reboot: pod evicted %v, %s started %v; want both", !k.exists(p), unit, k.sd.Active(unit))
	}
	if n := k.nodeNow(); !n.Spec.Unschedulable || n.Annotations[AnnotationCordoned] == "" {
		t.Errorf("the node is not cordoned by the agent for its reboot: %v %v", n.Spec.Unschedulable, n.Annotations)
	}
	if l := k.lease(LeasePrefix + "kernel"); l == nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != k.node.Name {
		t.Errorf("the reboot lock is not the node's: %+v", l)
	}
	got = k.waitPhase(nh, v1alpha1.NodeApplying)
	if !strings.Contains(got.Status.Message, "rebooting the node to finish applying kernel/kernel-args") {
		t.Errorf("message %q, want the reboot", got.Status.Message)
	}

	// The reboot: the agent goes, the node comes back not Ready yet, in
	// another boot, and a new agent starts.
	stop()
	k.setReady(false)
	boot.Store("boot-2")
	k.startAgent(withReboot)
	time.Sleep(1500 * time.Millisecond)
	if n := k.nodeNow(); !n.Spec.Unschedulable {
		t.Errorf("uncordoned before the Node is Ready")
	}
	if k.lease(LeasePrefix+"kernel") == nil {
		t.Errorf("the reboot lock released before the Node is Ready")
	}
	k.setReady(true)
	k.waitPhase(nh, v1alpha1.NodeSucceeded)
	k.until(func() string { return "still cordoned, or the lock held, after the reboot" }, func() bool {
		n := k.nodeNow()
		return !n.Spec.Unschedulable && n.Annotations[AnnotationCordoned] == "" && k.lease(LeasePrefix+"kernel") == nil
	})
	select {
	case b := <-reboots:
		t.Errorf("a second reboot, asked in %s", b)
	case <-time.After(time.Second):
	}
}

// An apply that fails as a whole does not reboot: the reboot would not
// finish the hooks. The lock is released and the node uncordoned, and the
// NodeHooks says what failed.
func TestKubeAgentNoRebootAfterFailedApply(t *testing.T) {
	t.Parallel()
	k := startDrainCluster(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-noreboot"}}, -1)
	k.setReady(true)
	k.sd.FailOn("reload", "", errors.New("systemd refused the reload"))
	reboots := make(chan struct{}, 10)
	k.startAgent(func(cfg *Config) {
		cfg.LeaseNamespace = "default"
		cfg.BootID = func() (string, error) { return "boot-1", nil }
		cfg.Connect = func(context.Context) (*Systemd, error) {
			return &Systemd{Systemd: k.sd, Reboot: func(context.Context) error { reboots <- struct{}{}; return nil }}, nil
		}
	})
	_, nh := k.hooks("kernel", drainHook("kernel-args", hooks.DisruptionReboot))
	got := k.waitPhase(nh, v1alpha1.NodeFailed)
	if !strings.Contains(got.Status.Message, "the apply failed") {
		t.Errorf("message %q, want the failed apply", got.Status.Message)
	}
	k.until(func() string { return "the node cordoned, or the lock held, after a failed apply" }, func() bool {
		n := k.nodeNow()
		return !n.Spec.Unschedulable && n.Annotations[AnnotationCordoned] == "" && k.lease(LeasePrefix+"kernel") == nil
	})
	select {
	case <-reboots:
		t.Error("rebooted after a failed apply")
	case <-time.After(time.Second):
	}
}
