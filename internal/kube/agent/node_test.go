package agent

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hostprov/hostprov/internal/kube"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/apply/applytest"
	"github.com/hostprov/hostprov/pkg/compile"
)

const testNode = "worker-1"

// fakeNode is a node of the agent over applytest's fake systemd, in a
// directory of its own.
type fakeNode struct {
	t  *testing.T
	n  *node
	sd *applytest.Fake
}

func newFakeNode(t *testing.T) *fakeNode {
	t.Helper()
	opts := apply.Options{Root: t.TempDir()}
	if err := apply.PrepareDirs(opts); err != nil {
		t.Fatal(err)
	}
	sd := applytest.New()
	sd.UnitDir = opts.UnitDirPath()
	return &fakeNode{t: t, sd: sd,
		n: &node{opts: opts, log: slog.New(slog.NewTextHandler(io.Discard, nil)), builds: map[string]built{}}}
}

func hostHooks(name string, selector map[string]string, hooks ...v1alpha1.Hook) *v1alpha1.HostHooks {
	hh := &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.HostHooksSpec{Hooks: hooks}}
	if selector != nil {
		hh.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: selector}
	}
	return hh
}

func service(name string) v1alpha1.Hook {
	return v1alpha1.Hook{Name: name, Exec: []string{"/bin/sleep", "infinity"}}
}

// nodeHooks is hh's NodeHooks for the test node, approved for its current
// hooks when approved.
func nodeHooks(hh *v1alpha1.HostHooks, approved bool) *v1alpha1.NodeHooks {
	nh := &v1alpha1.NodeHooks{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.NodeHooksName(hh.Name, testNode), UID: types.UID("uid-" + hh.Name)},
		Spec: v1alpha1.NodeHooksSpec{NodeName: testNode, HostHooks: hh.Name}}
	if approved {
		nh.Spec.HooksHash = v1alpha1.HooksHash(hh.Spec.Hooks)
	}
	return nh
}

func (f *fakeNode) view(ls labels.Set, hhs []*v1alpha1.HostHooks, nhs []*v1alpha1.NodeHooks) *view {
	v := &view{labels: ls, hostHooks: map[string]*v1alpha1.HostHooks{}, nodeHooks: nhs}
	for _, hh := range hhs {
		v.hostHooks[hh.Name] = hh
	}
	return v
}

// sync syncs v and returns the status of every NodeHooks of v, by name,
// after writing it into the NodeHooks as the API server would keep it.
func (f *fakeNode) sync(v *view) map[string]v1alpha1.NodeHooksStatus {
	f.t.Helper()
	r, err := f.n.sync(context.Background(), f.sd, v)
	if err != nil {
		f.t.Fatalf("sync: %v", err)
	}
	out := map[string]v1alpha1.NodeHooksStatus{}
	for _, nh := range v.nodeHooks {
		st := status(nh, v.hostHooks[nh.Spec.HostHooks], r.outcomes[nh.Spec.HostHooks], r.reports, time.Now())
		nh.Status = st
		out[nh.Spec.HostHooks] = st
	}
	return out
}

func (f *fakeNode) state() *apply.State {
	f.t.Helper()
	st, err := apply.LoadState(apply.StatePath(f.n.opts.StateDirPath()))
	if err != nil {
		f.t.Fatal(err)
	}
	return st
}

// applyOwnSpec applies a spec of the node's own, as hostprov apply does:
// the file, as the set named set, with one hook named hook that sleeps.
// It returns the spec's units.
func (f *fakeNode) applyOwnSpec(file, set, hook string) []compile.Unit {
	f.t.Helper()
	r, diags := compile.Build(file, []byte("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n  - name: "+hook+"\n    exec: [/bin/sleep, infinity]\n"), compile.Options{})
	own := r.Units
	if diags.HasErrors(false) {
		f.t.Fatal(diags)
	}
	p, err := apply.NewPlanSets(context.Background(), []apply.SpecSet{{Name: set, Units: own}}, f.state(), f.n.opts)
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := apply.Execute(context.Background(), p, f.sd, nil); err != nil {
		f.t.Fatal(err)
	}
	return own
}

func (f *fakeNode) setsInState() []string {
	var out []string
	for _, u := range f.state().Units {
		if !slices.Contains(out, u.Set) {
			out = append(out, u.Set)
		}
	}
	slices.Sort(out)
	return out
}

// unitOf is the unit a hook of hh renders to.
func unitOf(t *testing.T, hh *v1alpha1.HostHooks, hook int) string {
	t.Helper()
	set, _ := (&node{builds: map[string]built{}}).build(hh, "x").set, 0
	for _, u := range set.Units {
		if u.Hook == hook {
			return u.Name
		}
	}
	t.Fatalf("no unit for hook %d of %s", hook, hh.Name)
	return ""
}

// The decisions: an approved HostHooks that selects the node is applied;
// one not approved yet, or approved for other hooks, is left as it is; one
// that selects other nodes never reaches this one; and all of it is one
// apply with one reload.
func TestApprovedSelectedAppliedOthersLeft(t *testing.T) {
	f := newFakeNode(t)
	workers := map[string]string{"role": "worker"}
	a := hostHooks("a", workers, service("a-svc"))
	b := hostHooks("b", nil, service("b-svc"))
	c := hostHooks("c", workers, service("c-svc"))
	other := hostHooks("gpu", map[string]string{"gpu": "yes"}, service("gpu-svc"))
	nhA, nhB, nhC := nodeHooks(a, true), nodeHooks(b, true), nodeHooks(c, false)
	stale := nodeHooks(hostHooks("c", workers, service("c-old")), true) // approved for hooks c no longer has
	stale.Name, stale.UID, stale.Spec.HostHooks = "d."+testNode, "uid-d", "d"
	d := hostHooks("d", workers, service("d-svc"))
	v := f.view(labels.Set{"role": "worker"}, []*v1alpha1.HostHooks{a, b, c, d, other}, []*v1alpha1.NodeHooks{nhA, nhB, nhC, stale})
	got := f.sync(v)

	if want := []string{"hosthooks.a", "hosthooks.b"}; !slices.Equal(f.setsInState(), want) {
		t.Errorf("sets on the node: %q, want %q", f.setsInState(), want)
	}
	if n := f.sd.Count("reload"); n != 1 {
		t.Errorf("%d reloads, want 1 for both sets: %q", n, f.sd.Log())
	}
	for _, u := range []string{unitOf(t, a, 0), unitOf(t, b, 0)} {
		if !f.sd.Active(u) {
			t.Errorf("%s not started: %q", u, f.sd.Log())
		}
	}
	for _, name := range []string{"a", "b"} {
		st := got[name]
		if st.Phase != v1alpha1.NodeSucceeded || st.AppliedHash != v.nodeHooksOf(name).Spec.HooksHash || st.AppliedAt == nil ||
			len(st.Hooks) != 1 || st.Hooks[0].Name != name+"-svc" || st.Hooks[0].Phase != "active" {
			t.Errorf("%s: status %+v; want Succeeded at its hash, one active hook", name, st)
		}
	}
	for _, name := range []string{"c", "d"} {
		if st := got[name]; st.Phase != v1alpha1.NodePending || st.AppliedHash != "" || len(st.Hooks) != 0 || st.AppliedAt != nil {
			t.Errorf("%s: status %+v; want Pending, nothing applied", name, st)
		}
	}

	// Again, with nothing changed: no call to systemd that changes
	// anything, the same statuses.
	f.sd.Reset()
	again := f.sync(v)
	if log := f.sd.Log(); len(log) != 0 {
		t.Errorf("a sync with nothing changed called systemd: %q", log)
	}
	for name, st := range got {
		if !statusEqual(st, again[name]) {
			t.Errorf("%s: status changed by a sync that changed nothing:\n%+v\n%+v", name, st, again[name])
		}
	}
}

func statusEqual(a, b v1alpha1.NodeHooksStatus) bool {
	return a.Phase == b.Phase && a.AppliedHash == b.AppliedHash && a.Message == b.Message &&
		(a.AppliedAt == nil) == (b.AppliedAt == nil) && (a.AppliedAt == nil || a.AppliedAt.Equal(b.AppliedAt)) &&
		len(a.Hooks) == len(b.Hooks)
}

// A HostHooks that no longer selects the node, that is being deleted, or
// that is gone, has its set pruned, in one apply, and its NodeHooks says
// Removed; the node's own spec set (not the agent's) is never touched.
func TestPruneUnselectedDeletedGoneNeverOwn(t *testing.T) {
	f := newFakeNode(t)
	// The node's own spec, as hostprov apply -d /etc/hostprov/hooks.d
	// installs it.
	r, diags := compile.Build("hooks.d/local.yaml", []byte("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n  - name: local\n    exec: [/bin/sleep, infinity]\n"), compile.Options{})
	own := r.Units
	if diags.HasErrors(false) {
		t.Fatal(diags)
	}
	st, _ := apply.LoadState(apply.StatePath(f.n.opts.StateDirPath()))
	p, err := apply.NewPlanSets(context.Background(), []apply.SpecSet{{Name: "local", Units: own}}, st, f.n.opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := apply.Execute(context.Background(), p, f.sd, nil); err != nil {
		t.Fatal(err)
	}

	ls := labels.Set{"role": "worker"}
	relabel := hostHooks("relabel", map[string]string{"role": "worker"}, service("relabel-svc"))
	deleting := hostHooks("deleting", nil, service("deleting-svc"))
	gone := hostHooks("gone", nil, service("gone-svc"))
	keep := hostHooks("keep", nil, service("keep-svc"))
	all := []*v1alpha1.HostHooks{relabel, deleting, gone, keep}
	var nhs []*v1alpha1.NodeHooks
	for _, hh := range all {
		nhs = append(nhs, nodeHooks(hh, true))
	}
	f.sync(f.view(ls, all, nhs))
	if want := []string{"hosthooks.deleting", "hosthooks.gone", "hosthooks.keep", "hosthooks.relabel", "local"}; !slices.Equal(f.setsInState(), want) {
		t.Fatalf("sets: %q, want %q", f.setsInState(), want)
	}

	f.sd.Reset()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	nhs[0].Spec.Remove = true // the controller approved the removal
	got := f.sync(f.view(labels.Set{"role": "infra"}, []*v1alpha1.HostHooks{relabel, deleting, keep}, nhs))
	if want := []string{"hosthooks.keep", "local"}; !slices.Equal(f.setsInState(), want) {
		t.Errorf("sets after pruning: %q, want %q", f.setsInState(), want)
	}
	if n := f.sd.Count("reload"); n != 1 {
		t.Errorf("%d reloads, want one for the three sets pruned: %q", n, f.sd.Log())
	}
	for _, name := range []string{"relabel", "deleting", "gone"} {
		u := unitOf(t, hostHooks(name, nil, service(name+"-svc")), 0)
		if f.sd.Active(u) {
			t.Errorf("%s still active", u)
		}
		if _, err := os.Lstat(filepath.Join(f.n.opts.UnitDirPath(), u)); !os.IsNotExist(err) {
			t.Errorf("%s still on disk (%v)", u, err)
		}
		if st := got[name]; st.Phase != v1alpha1.NodeRemoved || st.AppliedHash != "" || len(st.Hooks) != 0 || st.AppliedAt == nil {
			t.Errorf("%s: %+v; want Removed, nothing applied, when", name, st)
		}
	}
	if !f.sd.Active(own[0].Name) {
		t.Errorf("the node's own %s was touched: %q", own[0].Name, f.sd.Log())
	}
	for _, c := range f.sd.Calls() {
		if slices.Contains(c.Units, own[0].Name) {
			t.Errorf("systemd was asked about the node's own unit: %s", c)
		}
	}
	if st := got["keep"]; st.Phase != v1alpha1.NodeSucceeded {
		t.Errorf("keep: %+v", st)
	}
}

// A node that the selector of a HostHooks no longer matches keeps its
// units until the controller approves their removal (spec.remove), so that
// a relabelling goes through the rollout's budget; a HostHooks whose
// NodeHooks is gone is pruned at once, as nothing would approve it.
func TestUnselectedWaitsForRemoval(t *testing.T) {
	f := newFakeNode(t)
	workers := map[string]string{"role": "worker"}
	relabel := hostHooks("relabel", workers, service("relabel-svc"))
	orphan := hostHooks("orphan", workers, service("orphan-svc"))
	all := []*v1alpha1.HostHooks{relabel, orphan}
	nhRelabel, nhOrphan := nodeHooks(relabel, true), nodeHooks(orphan, true)
	f.sync(f.view(labels.Set(workers), all, []*v1alpha1.NodeHooks{nhRelabel, nhOrphan}))
	if want := []string{"hosthooks.orphan", "hosthooks.relabel"}; !slices.Equal(f.setsInState(), want) {
		t.Fatalf("sets: %q, want %q", f.setsInState(), want)
	}
	applied := nhRelabel.Status

	// Relabelled out, no removal approved; orphan's NodeHooks deleted.
	f.sd.Reset()
	infra := labels.Set{"role": "infra"}
	got := f.sync(f.view(infra, all, []*v1alpha1.NodeHooks{nhRelabel}))
	if want := []string{"hosthooks.relabel"}; !slices.Equal(f.setsInState(), want) {
		t.Errorf("sets before the removal is approved: %q, want %q", f.setsInState(), want)
	}
	if u := unitOf(t, relabel, 0); !f.sd.Active(u) {
		t.Errorf("%s stopped before its removal was approved: %q", u, f.sd.Log())
	}
	if st := got["relabel"]; st.Phase != v1alpha1.NodeSucceeded || st.AppliedHash != applied.AppliedHash || !statusEqual(st, applied) {
		t.Errorf("relabel before the removal is approved: %+v; want as it was, %+v", st, applied)
	}

	// Approved: pruned, Removed.
	nhRelabel.Spec.Remove = true
	got = f.sync(f.view(infra, all, []*v1alpha1.NodeHooks{nhRelabel}))
	if sets := f.setsInState(); len(sets) != 0 {
		t.Errorf("sets after the removal was approved: %q", sets)
	}
	if st := got["relabel"]; st.Phase != v1alpha1.NodeRemoved {
		t.Errorf("relabel after the removal was approved: %+v; want Removed", st)
	}

	// Selected again with the removal still approved (the controller
	// clears it when it approves the node again): applied, as selected.
	got = f.sync(f.view(labels.Set(workers), all, []*v1alpha1.NodeHooks{nhRelabel}))
	if st := got["relabel"]; st.Phase != v1alpha1.NodeSucceeded {
		t.Errorf("relabel selected again: %+v; want Succeeded", st)
	}
}

// Without its Node the agent decides nothing: no labels is no reason to
// prune.
func TestNoNodeNoPrune(t *testing.T) {
	f := newFakeNode(t)
	hh := hostHooks("a", nil, service("a-svc"))
	nh := nodeHooks(hh, true)
	f.sync(f.view(labels.Set{}, []*v1alpha1.HostHooks{hh}, []*v1alpha1.NodeHooks{nh}))
	f.sd.Reset()
	f.sync(f.view(nil, nil, []*v1alpha1.NodeHooks{nh}))
	if log := f.sd.Log(); len(log) != 0 || !slices.Equal(f.setsInState(), []string{"hosthooks.a"}) {
		t.Errorf("without the Node: calls %q, sets %q; want none, the set kept", log, f.setsInState())
	}
}

// Hooks that fail hostprov's validation are not applied, and the node says
// why, at the fields; the units of earlier hooks stay.
func TestInvalidHooksReportedNotApplied(t *testing.T) {
	f := newFakeNode(t)
	hh := hostHooks("a", nil, service("a-svc"))
	nh := nodeHooks(hh, true)
	f.sync(f.view(labels.Set{}, []*v1alpha1.HostHooks{hh}, []*v1alpha1.NodeHooks{nh}))
	bad := hostHooks("a", nil, service("a-svc"), v1alpha1.Hook{Name: "b", Exec: []string{""}})
	nh.Spec.HooksHash = v1alpha1.HooksHash(bad.Spec.Hooks)
	f.sd.Reset()
	got := f.sync(f.view(labels.Set{}, []*v1alpha1.HostHooks{bad}, []*v1alpha1.NodeHooks{nh}))["a"]
	if log := f.sd.Log(); len(log) != 0 {
		t.Errorf("invalid hooks reached systemd: %q", log)
	}
	if got.Phase != v1alpha1.NodeFailed || got.AppliedHash != nh.Spec.HooksHash || !strings.Contains(got.Message, "spec.hooks[1].exec") ||
		len(got.Hooks) != 1 || got.Hooks[0].Phase != "active" {
		t.Errorf("status %+v; want Failed at the new hash, the message at spec.hooks[1].exec, the old hook still active", got)
	}
}

// A hook whose start fails is reported with its exit code and reason; a
// later sync for the same hooks (another event, a restarted agent) does
// not run it again; new hooks do.
func TestFailedStartReportedNotRetried(t *testing.T) {
	f := newFakeNode(t)
	hh := hostHooks("a", nil, service("a-svc"), service("a-other"))
	nh := nodeHooks(hh, true)
	u := unitOf(t, hh, 0)
	f.sd.FailOn("start", u, errStart)
	got := f.sync(f.view(labels.Set{}, []*v1alpha1.HostHooks{hh}, []*v1alpha1.NodeHooks{nh}))["a"]
	if got.Phase != v1alpha1.NodeFailed || got.AppliedHash != nh.Spec.HooksHash || len(got.Hooks) != 2 {
		t.Fatalf("status %+v; want Failed at its hash with two hooks", got)
	}
	h := got.Hooks[0]
	if h.Name != "a-svc" || h.Phase != "failed" || h.ExitCode == nil || *h.ExitCode != 1 || h.Reason != "exit-code" {
		t.Errorf("failed hook %+v; want a-svc failed, exit code 1, reason exit-code", h)
	}
	if o := got.Hooks[1]; o.Phase != "active" || o.ExitCode != nil || len(o.Output) != 0 {
		t.Errorf("other hook %+v; want active, no exit code, no output", o)
	}
	if got.Message != "" {
		t.Errorf("message %q: a hook that failed is its hook's result, not the apply's", got.Message)
	}

	f.sd.Reset()
	f.sync(f.view(labels.Set{"x": "y"}, []*v1alpha1.HostHooks{hh}, []*v1alpha1.NodeHooks{nh}))
	if n := f.sd.Count("start") + f.sd.Count("restart"); n != 0 {
		t.Errorf("the failed hook ran again on an unrelated sync: %q", f.sd.Log())
	}

	// Hooks fixed: a new hash, approved: it runs.
	f.sd.FailOn("start", u, nil)
	fixed := hostHooks("a", nil, service("a-svc"), service("a-other"), service("a-third"))
	nh.Spec.HooksHash = v1alpha1.HooksHash(fixed.Spec.Hooks)
	f.sd.Reset()
	got = f.sync(f.view(labels.Set{}, []*v1alpha1.HostHooks{fixed}, []*v1alpha1.NodeHooks{nh}))["a"]
	if !f.sd.Active(u) || got.Phase != v1alpha1.NodeSucceeded {
		t.Errorf("after new hooks: %s active %v, status %+v; calls %q", u, f.sd.Active(u), got, f.sd.Log())
	}
}

// A change of the HostHooks' spec.retry starts again, once, the hook
// whose start failed, and only it; the status records the retry carried
// out, so that the syncs after it (another event, a restarted agent) run
// nothing. A node that succeeded is left alone by a retry, status and
// all, and a retry asked for before the node had the current hooks runs
// nothing more than their first apply.
func TestFailedStartRetriedOncePerRetry(t *testing.T) {
	f := newFakeNode(t)
	hh := hostHooks("a", nil, service("a-svc"), service("a-other"))
	nh := nodeHooks(hh, true)
	u, other := unitOf(t, hh, 0), unitOf(t, hh, 1)
	f.sd.FailOn("start", u, errStart)
	starts := func(unit string) int {
		n := 0
		for _, c := range f.sd.Calls() {
			if (c.Method == "start" || c.Method == "restart") && slices.Contains(c.Units, unit) {
				n++
			}
		}
		return n
	}
	sync := func(labels labels.Set) v1alpha1.NodeHooksStatus {
		f.sd.Reset()
		return f.sync(f.view(labels, []*v1alpha1.HostHooks{hh}, []*v1alpha1.NodeHooks{nh}))["a"]
	}
	if got := sync(labels.Set{}); got.Phase != v1alpha1.NodeFailed || got.Retry != 0 {
		t.Fatalf("status %+v; want Failed, retry 0", got)
	}

	hh.Spec.Retry = 1
	got := sync(labels.Set{})
	if n := starts(u); n != 1 || starts(other) != 0 {
		t.Errorf("retry 1: %s started %d times, %s %d; want once and never: calls %q", u, n, other, starts(other), f.sd.Log())
	}
	if got.Phase != v1alpha1.NodeFailed || got.Retry != 1 || got.AppliedHash != nh.Spec.HooksHash {
		t.Errorf("retry 1, failed again: status %+v; want Failed at the hash, retry 1", got)
	}
	for _, ls := range []labels.Set{{"x": "y"}, {}} {
		sync(ls)
		if n := starts(u); n != 0 {
			t.Errorf("a sync after retry 1 was carried out started %s %d times: calls %q", u, n, f.sd.Log())
		}
	}

	// Set back: a change, so the next increase is not lost under it.
	f.sd.FailOn("start", u, nil)
	hh.Spec.Retry = 0
	got = sync(labels.Set{})
	if n := starts(u); n != 1 || got.Phase != v1alpha1.NodeSucceeded || got.Retry != 0 {
		t.Errorf("retry set back to 0: %s started %d times, status %+v; want once, Succeeded, retry 0", u, n, got)
	}
	if starts(other) != 0 {
		t.Errorf("%s, which succeeded, was started again: calls %q", other, f.sd.Log())
	}

	// Succeeded: a retry changes nothing on the node, nor its status.
	hh.Spec.Retry = 7
	before := nh.Status
	got = sync(labels.Set{})
	if n := starts(u) + starts(other); n != 0 {
		t.Errorf("a retry on a node that succeeded started units: calls %q", f.sd.Log())
	}
	if !statusEqual(got, before) || got.Retry != before.Retry {
		t.Errorf("a retry on a node that succeeded changed its status: %+v, was %+v", got, before)
	}

	// New hooks, approved while spec.retry is 7: their first apply
	// records it, and a failure of it waits for the next change.
	fresh := hostHooks("a", nil, service("a-svc"), service("a-other"), service("a-third"))
	fresh.Spec.Retry = 7
	third := unitOf(t, fresh, 2)
	f.sd.FailOn("start", third, errStart)
	hh = fresh
	nh.Spec.HooksHash = v1alpha1.HooksHash(fresh.Spec.Hooks)
	got = sync(labels.Set{})
	if got.Phase != v1alpha1.NodeFailed || got.Retry != 7 || starts(third) != 1 {
		t.Fatalf("new hooks at retry 7: status %+v, %s started %d times; want Failed, retry 7, once", got, third, starts(third))
	}
	sync(labels.Set{})
	if n := starts(third); n != 0 {
		t.Errorf("new hooks at retry 7: a second sync started %s %d times", third, n)
	}
}

var errStart = &startError{}

type startError struct{}

func (*startError) Error() string { return "job failed: exit-code" }

// A unit of an agent's set that the node's own spec claims too is a
// conflict of that set only: it is reported and not applied, and the
// others are.
func TestConflictKeepsOnlyItsSet(t *testing.T) {
	f := newFakeNode(t)
	f.applyOwnSpec("hooks.d/local.yaml", "local", "shared")
	clash := hostHooks("clash", nil, service("shared"))
	fine := hostHooks("fine", nil, service("fine-svc"))
	got := f.sync(f.view(labels.Set{}, []*v1alpha1.HostHooks{clash, fine}, []*v1alpha1.NodeHooks{nodeHooks(clash, true), nodeHooks(fine, true)}))
	if st := got["clash"]; st.Phase != v1alpha1.NodeFailed || !strings.Contains(st.Message, "spec set local owns it") {
		t.Errorf("clash: %+v; want Failed with the conflict", st)
	}
	if st := got["fine"]; st.Phase != v1alpha1.NodeSucceeded {
		t.Errorf("fine: %+v; want Succeeded", st)
	}
	if want := []string{"hosthooks.fine", "local"}; !slices.Equal(f.setsInState(), want) {
		t.Errorf("sets %q, want %q", f.setsInState(), want)
	}
}

// The files, directories and links of a HostHooks are placed on the node
// with its units, owned by its set, and removed with them when the
// HostHooks is gone, also when its hooks have nothing but files.
func TestStorageAppliedAndPruned(t *testing.T) {
	f := newFakeNode(t)
	conf := "listen = 9100\n"
	withUnit := hostHooks("metrics", nil, v1alpha1.Hook{
		Name:        "metrics",
		Exec:        []string{"/bin/sleep", "infinity"},
		Files:       []v1alpha1.File{{Path: "/etc/metrics/collect.conf", Contents: &conf, Mode: "0640"}},
		Directories: []v1alpha1.Directory{{Path: "/var/lib/metrics", Mode: "0750"}},
		Links:       []v1alpha1.Link{{Path: "/etc/metrics/current", Target: "collect.conf"}},
	})
	motd := "managed by hostprov\n"
	filesOnly := hostHooks("motd", nil, v1alpha1.Hook{Name: "motd", Files: []v1alpha1.File{{Path: "/etc/motd.d/hostprov", Contents: &motd}}})
	all := []*v1alpha1.HostHooks{withUnit, filesOnly}
	nhs := []*v1alpha1.NodeHooks{nodeHooks(withUnit, true), nodeHooks(filesOnly, true)}
	got := f.sync(f.view(labels.Set{}, all, nhs))
	for _, name := range []string{"metrics", "motd"} {
		if st := got[name]; st.Phase != v1alpha1.NodeSucceeded || st.Message != "" {
			t.Errorf("%s: %+v; want Succeeded", name, st)
		}
	}
	root := f.n.opts.Root
	if b, err := os.ReadFile(filepath.Join(root, "etc/metrics/collect.conf")); err != nil || string(b) != conf {
		t.Errorf("collect.conf: %q, %v; want %q", b, err, conf)
	} else if fi, _ := os.Stat(filepath.Join(root, "etc/metrics/collect.conf")); fi.Mode().Perm() != 0o640 {
		t.Errorf("collect.conf has mode %v, want 0640", fi.Mode().Perm())
	}
	if fi, err := os.Stat(filepath.Join(root, "var/lib/metrics")); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o750 {
		t.Errorf("/var/lib/metrics: %v, %v; want a directory of mode 0750", fi, err)
	}
	if target, err := os.Readlink(filepath.Join(root, "etc/metrics/current")); err != nil || target != "collect.conf" {
		t.Errorf("/etc/metrics/current -> %q, %v; want collect.conf", target, err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "etc/motd.d/hostprov")); err != nil || string(b) != motd {
		t.Errorf("motd: %q, %v", b, err)
	}
	sets := map[string]string{}
	for _, p := range f.state().Paths {
		sets[p.Path] = p.Set
	}
	if sets["/etc/metrics/collect.conf"] != "hosthooks.metrics" || sets["/etc/motd.d/hostprov"] != "hosthooks.motd" {
		t.Errorf("owners of the paths in the state: %q", sets)
	}

	// Both HostHooks are deleted: everything they placed goes.
	f.sync(f.view(labels.Set{}, nil, nil))
	for _, p := range []string{"etc/metrics/collect.conf", "etc/metrics/current", "var/lib/metrics", "etc/motd.d/hostprov"} {
		if _, err := os.Lstat(filepath.Join(root, p)); !os.IsNotExist(err) {
			t.Errorf("/%s is still on the node (%v)", p, err)
		}
	}
	if ps := f.state().Paths; len(ps) != 0 {
		t.Errorf("the state still has paths: %+v", ps)
	}
}

// A file of a HostHooks that clashes with one on the node (not written by
// hostprov, and no overwrite) fails that HostHooks alone: the others are
// applied, as with a unit that clashes.
func TestFileConflictKeepsOnlyItsSet(t *testing.T) {
	f := newFakeNode(t)
	writeNodeFile(t, filepath.Join(f.n.opts.Root, "etc/motd"), "the image's\n")
	motd := "managed by hostprov\n"
	clash := hostHooks("clash", nil, v1alpha1.Hook{Name: "motd", Files: []v1alpha1.File{{Path: "/etc/motd", Contents: &motd}}})
	fine := hostHooks("fine", nil, service("fine-svc"))
	got := f.sync(f.view(labels.Set{}, []*v1alpha1.HostHooks{clash, fine}, []*v1alpha1.NodeHooks{nodeHooks(clash, true), nodeHooks(fine, true)}))
	if st := got["clash"]; st.Phase != v1alpha1.NodeFailed || !strings.Contains(st.Message, "/etc/motd") {
		t.Errorf("clash: %+v; want Failed with the conflict at /etc/motd", st)
	}
	if st := got["fine"]; st.Phase != v1alpha1.NodeSucceeded {
		t.Errorf("fine: %+v; want Succeeded", st)
	}
	if b, _ := os.ReadFile(filepath.Join(f.n.opts.Root, "etc/motd")); string(b) != "the image's\n" {
		t.Errorf("/etc/motd is %q: the node's file was replaced", b)
	}
}

func writeNodeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestNodeSetOfAgentNameNotPruned: a node's own spec named like an agent's
// set (hosthooks.*, which an earlier hostprov accepted in hooks.d) is not
// the agent's: with no HostHooks of that name, the agent neither prunes nor
// reports it. The agent's own sets are recorded as its own in the state.
func TestNodeSetOfAgentNameNotPruned(t *testing.T) {
	f := newFakeNode(t)
	own := f.applyOwnSpec("/etc/hostprov/hooks.d/hosthooks.base.yaml", "hosthooks.base", "local")
	other := hostHooks("other", nil, service("other-svc"))
	f.sync(f.view(labels.Set{"role": "worker"}, []*v1alpha1.HostHooks{other}, []*v1alpha1.NodeHooks{nodeHooks(other, true)}))
	if want := []string{"hosthooks.base", "hosthooks.other"}; !slices.Equal(f.setsInState(), want) {
		t.Errorf("sets: %q, want %q: the node's own set was pruned", f.setsInState(), want)
	}
	if !f.sd.Active(own[0].Name) {
		t.Errorf("the node's own %s was stopped: %q", own[0].Name, f.sd.Log())
	}
	if owner, _ := f.state().SetOwner("hosthooks.other"); owner != kube.SetOwner {
		t.Errorf("the agent's set is recorded as %q's", owner)
	}
	// Once the HostHooks is gone, its set goes, and the node's stays.
	f.sync(f.view(labels.Set{"role": "worker"}, nil, nil))
	if want := []string{"hosthooks.base"}; !slices.Equal(f.setsInState(), want) {
		t.Errorf("sets after other is gone: %q, want %q", f.setsInState(), want)
	}
}

// A HostHooks whose hook would write a unit file over a unit the node has
// (kubelet.service in /usr/lib/systemd/system) fails that HostHooks alone,
// with the conflict naming the node's unit and the drop-in route; nothing
// is written in its place and the node's unit is not touched.
func TestShadowedNodeUnitKeepsOnlyItsSet(t *testing.T) {
	f := newFakeNode(t)
	vendor := filepath.Join(f.n.opts.Root, "usr/lib/systemd/system/kubelet.service")
	writeNodeFile(t, vendor, "[Service]\nExecStart=/usr/bin/kubelet\n")
	clash := hostHooks("clash", nil, service("kubelet"))
	fine := hostHooks("fine", nil, service("fine-svc"))
	got := f.sync(f.view(labels.Set{}, []*v1alpha1.HostHooks{clash, fine}, []*v1alpha1.NodeHooks{nodeHooks(clash, true), nodeHooks(fine, true)}))
	if st := got["clash"]; st.Phase != v1alpha1.NodeFailed || !strings.Contains(st.Message, "/usr/lib/systemd/system/kubelet.service") ||
		!strings.Contains(st.Message, "dropins") {
		t.Errorf("clash: %+v; want Failed with the conflict naming the node's kubelet.service and drop-ins", st)
	}
	if st := got["fine"]; st.Phase != v1alpha1.NodeSucceeded {
		t.Errorf("fine: %+v; want Succeeded", st)
	}
	if _, err := os.Lstat(filepath.Join(f.n.opts.UnitDirPath(), "kubelet.service")); !os.IsNotExist(err) {
		t.Errorf("a kubelet.service was written to the unit directory (%v)", err)
	}
	for _, call := range f.sd.Log() {
		if strings.Contains(call, "kubelet") {
			t.Errorf("systemd was asked to %q", call)
		}
	}
	if want := []string{"hosthooks.fine"}; !slices.Equal(f.setsInState(), want) {
		t.Errorf("sets %q, want %q", f.setsInState(), want)
	}
}

// A conflict is reported with what the cluster's user can do about it,
// and names none of hostprov apply's flags (--adopt, --force), which a
// HostHooks does not offer: for a unit file, moving it away on the node;
// for a file of a hook, also overwrite: true in the HostHooks.
func TestConflictMessagesNameNoFlag(t *testing.T) {
	f := newFakeNode(t)
	unitHH := hostHooks("unit", nil, service("taken-svc"))
	writeNodeFile(t, filepath.Join(f.n.opts.UnitDirPath(), unitOf(t, unitHH, 0)), "[Service]\nExecStart=/bin/mine\n")
	writeNodeFile(t, filepath.Join(f.n.opts.Root, "etc/motd"), "the image's\n")
	motd := "managed by hostprov\n"
	fileHH := hostHooks("file", nil, v1alpha1.Hook{Name: "motd", Files: []v1alpha1.File{{Path: "/etc/motd", Contents: &motd}}})
	got := f.sync(f.view(labels.Set{}, []*v1alpha1.HostHooks{unitHH, fileHH},
		[]*v1alpha1.NodeHooks{nodeHooks(unitHH, true), nodeHooks(fileHH, true)}))
	for name, want := range map[string][]string{
		"unit": {"hostprov did not write it", "move it away"},
		"file": {"/etc/motd", "move it away", "set overwrite: true on it"},
	} {
		st := got[name]
		if st.Phase != v1alpha1.NodeFailed {
			t.Errorf("%s: %+v; want Failed with the conflict", name, st)
			continue
		}
		for _, w := range want {
			if !strings.Contains(st.Message, w) {
				t.Errorf("%s: message %q does not say %q", name, st.Message, w)
			}
		}
		if strings.Contains(st.Message, "--") {
			t.Errorf("%s: message %q names a flag of hostprov apply, which a HostHooks does not have", name, st.Message)
		}
	}
}
