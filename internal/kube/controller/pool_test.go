package controller

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// pool is a cluster of HostHooks over the same nodes, as the controller
// sees it, with agents that do what they are approved for.
type pool struct {
	t     *testing.T
	hhs   []*v1alpha1.HostHooks
	nodes []Node
	nhs   []v1alpha1.NodeHooks
	// most is the most nodes seen unavailable at once; limit, when
	// set, is how many may be.
	most, limit int
}

// named is a HostHooks of the name, with its own UID, changed by opts.
func named(name string, opts ...func(*v1alpha1.HostHooks)) *v1alpha1.HostHooks {
	hh := hostHooks(opts...)
	hh.Name, hh.UID = name, types.UID("uid-"+name)
	return hh
}

// decide has Decide decide for hh with the budget as the Reconciler
// gives it, and carries the decision out.
func (p *pool) decide(hh *v1alpha1.HostHooks) Decision {
	p.t.Helper()
	var hhs []v1alpha1.HostHooks
	for _, h := range p.hhs {
		hhs = append(hhs, *h)
	}
	busy := BusyNodes(hhs, p.nodes, p.nhs)
	nodes := slices.Clone(p.nodes)
	for i := range nodes {
		nodes[i].Busy = busy[nodes[i].Name]
	}
	var own []v1alpha1.NodeHooks
	for _, nh := range p.nhs {
		if nh.Spec.HostHooks == hh.Name {
			own = append(own, nh)
		}
	}
	d := Decide(hh, nodes, own, t0)
	for _, c := range d.Create {
		c.CreationTimestamp = metav1.NewTime(t0)
		p.nhs = append(p.nhs, *c)
	}
	for i := range p.nhs {
		nh := &p.nhs[i]
		if slices.Contains(d.Approve, nh.Name) {
			nh.Spec.HooksHash, nh.Spec.Remove = d.Status.HooksHash, false
		}
		if slices.Contains(d.Remove, nh.Name) {
			nh.Spec.Remove = true
		}
	}
	p.nhs = slices.DeleteFunc(p.nhs, func(nh v1alpha1.NodeHooks) bool {
		return slices.ContainsFunc(d.Delete, func(del *v1alpha1.NodeHooks) bool { return del.Name == nh.Name })
	})
	hh.Status = d.Status
	p.check()
	return d
}

// hostHooksOf is the HostHooks of nh.
func (p *pool) hostHooksOf(nh *v1alpha1.NodeHooks) *v1alpha1.HostHooks {
	for _, hh := range p.hhs {
		if hh.Name == nh.Spec.HostHooks {
			return hh
		}
	}
	return nil
}

func (p *pool) labels(node string) labels.Set {
	for _, n := range p.nodes {
		if n.Name == node {
			return n.Labels
		}
	}
	return nil
}

// unavailable are the nodes that an agent is changing, or may change now:
// approved for the current hooks of a HostHooks that selects them and not
// done, or removing the hooks of one that does not.
func (p *pool) unavailable() []string {
	var out []string
	for i := range p.nhs {
		nh := &p.nhs[i]
		hh := p.hostHooksOf(nh)
		sel, _ := selector(hh.Spec.NodeSelector)
		h := v1alpha1.HooksHash(hh.Spec.Hooks)
		var busy bool
		if sel.Matches(p.labels(nh.Spec.NodeName)) {
			done := nh.Status.AppliedHash == h && (nh.Status.Phase == v1alpha1.NodeSucceeded || nh.Status.Phase == v1alpha1.NodeFailed)
			busy = nh.Spec.HooksHash == h && !done
		} else {
			busy = nh.Spec.Remove && nh.Status.Phase != v1alpha1.NodeRemoved && nh.Status.AppliedHash != ""
		}
		if busy && !slices.Contains(out, nh.Spec.NodeName) {
			out = append(out, nh.Spec.NodeName)
		}
	}
	slices.Sort(out)
	return out
}

func (p *pool) check() {
	p.t.Helper()
	u := p.unavailable()
	p.most = max(p.most, len(u))
	if p.limit > 0 && len(u) > p.limit {
		p.t.Fatalf("%d nodes unavailable at once, more than %d: %v", len(u), p.limit, u)
	}
}

// agents apply what every node is approved for, and remove what it is
// approved to remove, as the agent does.
func (p *pool) agents() {
	for i := range p.nhs {
		nh := &p.nhs[i]
		hh := p.hostHooksOf(nh)
		sel, _ := selector(hh.Spec.NodeSelector)
		switch {
		case !sel.Matches(p.labels(nh.Spec.NodeName)):
			if nh.Spec.Remove {
				nh.Status = v1alpha1.NodeHooksStatus{Phase: v1alpha1.NodeRemoved}
			}
		case nh.Spec.HooksHash == v1alpha1.HooksHash(hh.Spec.Hooks):
			nh.Status.AppliedHash, nh.Status.Phase = nh.Spec.HooksHash, v1alpha1.NodeSucceeded
		}
	}
}

func (p *pool) approvedFor(hh *v1alpha1.HostHooks) []string {
	var out []string
	for _, nh := range p.nhs {
		if nh.Spec.HostHooks == hh.Name && nh.Spec.HooksHash == v1alpha1.HooksHash(hh.Spec.Hooks) {
			out = append(out, nh.Spec.NodeName)
		}
	}
	slices.Sort(out)
	return out
}

// Two HostHooks over the same three nodes, each with maxUnavailable 1,
// disrupt one node at a time between them, however far each one's
// rollout is: the second approves the node the first has taken down, with
// no slot of its own, and waits for it.
func TestDecidePoolSharedBudget(t *testing.T) {
	a, b := named("a", withSelector(workers)), named("b", withSelector(workers), withHooks(hooksB))
	p := &pool{t: t, hhs: []*v1alpha1.HostHooks{a}, nodes: nodes(3, workers), limit: 1}
	p.decide(a)
	p.agents()
	p.decide(a)
	if got := p.unavailable(); !slices.Equal(got, []string{"n02"}) {
		t.Fatalf("a's rollout: %v unavailable, want n02", got)
	}

	// b comes while a has n02 down: b takes n02 too, not n01.
	p.hhs = append(p.hhs, b)
	d := p.decide(b)
	if diff := cmp.Diff([]string{v1alpha1.NodeHooksName("b", "n02")}, d.Approve); diff != "" {
		t.Errorf("b's first approvals while a has n02 (-want +got):\n%s", diff)
	}
	for range 10 {
		p.agents()
		p.decide(a)
		p.decide(b)
	}
	for _, hh := range p.hhs {
		if got := countsOf(hh.Status); got != (counts{3, 3, 3, 0, v1alpha1.PhaseComplete}) {
			t.Errorf("%s after the rollouts: %+v", hh.Name, got)
		}
	}
	if p.most != 1 {
		t.Errorf("at most %d nodes unavailable at once; want 1 (the check is not checking)", p.most)
	}
}

// Each HostHooks counts the shared unavailability against its own
// maxUnavailable: a node another HostHooks has down takes one of its
// slots whatever the other's limit.
func TestDecidePoolOwnLimits(t *testing.T) {
	two := named("two", withSelector(workers), withMaxUnavailable(intstr.FromInt32(2)))
	one := named("one", withSelector(workers), withHooks(hooksB))
	ns := nodes(4, workers)
	nhOf := func(hh *v1alpha1.HostHooks, node, spec, applied string, phase v1alpha1.NodePhase) v1alpha1.NodeHooks {
		nh := newNodeHooks(hh, node)
		nh.UID = types.UID(fmt.Sprintf("uid-%s-%s", hh.Name, node))
		nh.Spec.HooksHash, nh.Status.AppliedHash, nh.Status.Phase = spec, applied, phase
		return *nh
	}
	var nhs []v1alpha1.NodeHooks
	for _, n := range []string{"n01", "n02", "n03", "n04"} {
		nhs = append(nhs, nhOf(two, n, "", "", v1alpha1.NodePending), nhOf(one, n, "", "", v1alpha1.NodePending))
	}
	// one has n03 down.
	nhs[5] = nhOf(one, "n03", hashB, "", v1alpha1.NodePending)
	hhs := []v1alpha1.HostHooks{*two, *one}
	decide := func(hh *v1alpha1.HostHooks) []string {
		busy := BusyNodes(hhs, ns, nhs)
		ns := slices.Clone(ns)
		for i := range ns {
			ns[i].Busy = busy[ns[i].Name]
		}
		var own []v1alpha1.NodeHooks
		for _, nh := range nhs {
			if nh.Spec.HostHooks == hh.Name {
				own = append(own, nh)
			}
		}
		return Decide(hh, ns, own, t0).Approve
	}
	// two: n03 takes one of its two slots, and is approved with no
	// other; n01 takes the second.
	if diff := cmp.Diff([]string{v1alpha1.NodeHooksName("two", "n01"), v1alpha1.NodeHooksName("two", "n03")}, decide(two)); diff != "" {
		t.Errorf("two's approvals (-want +got):\n%s", diff)
	}
	// one: n03 is its one slot.
	if got := decide(one); len(got) != 0 {
		t.Errorf("one approved %v with its one slot taken", got)
	}
	// two has n01 down as well: one, limit 1, has two of its nodes
	// down, more than its limit, and approves only what is down
	// already.
	nhs[0] = nhOf(two, "n01", hashA, "", v1alpha1.NodeApplying)
	if diff := cmp.Diff([]string{v1alpha1.NodeHooksName("one", "n01")}, decide(one)); diff != "" {
		t.Errorf("one's approvals with n01 down for two (-want +got):\n%s", diff)
	}
}

// A node relabelled out of the selector keeps the hooks until their
// removal is approved within maxUnavailable; it is unavailable while it
// removes them, and a node coming back with its removal approved is
// approved again, which clears it.
func TestDecideRelabelOutWaitsForBudget(t *testing.T) {
	hh := hostHooks(withSelector(workers), withHooks(hooksB))
	ns := nodes(3, workers)
	for i := range ns {
		if ns[i].Name == "n03" {
			ns[i].Labels = map[string]string{"role": "infra"}
		}
	}
	nhs := []v1alpha1.NodeHooks{
		nodeHooks("n01", hashB, hashA, v1alpha1.NodeApplying),
		nodeHooks("n02", hashA, hashA, v1alpha1.NodeSucceeded),
		nodeHooks("n03", hashA, hashA, v1alpha1.NodeSucceeded),
	}
	d := Decide(hh, ns, nhs, t0)
	if len(d.Remove) != 0 || len(d.Delete) != 0 || len(d.Approve) != 0 {
		t.Fatalf("with n01 taking the one slot: remove %v, delete %v, approve %v; want nothing", d.Remove, names(d.Delete), d.Approve)
	}

	// n01 done: the removal goes first, and takes the slot.
	nhs[0].Status.AppliedHash, nhs[0].Status.Phase = hashB, v1alpha1.NodeSucceeded
	d = Decide(hh, ns, nhs, t0)
	if !slices.Equal(d.Remove, nhNames("n03")) || len(d.Approve) != 0 || len(d.Delete) != 0 {
		t.Fatalf("n01 done: remove %v, approve %v, delete %v; want the removal of n03 only", d.Remove, d.Approve, names(d.Delete))
	}

	// Approved and not removed yet: n03 holds the slot, and past the
	// progress deadline it holds the rollout.
	nhs[2].Spec.Remove = true
	at := ago(11 * time.Minute)
	nhs[2].Spec.ApprovedAt = &at
	d = Decide(hh, ns, nhs, t0)
	if len(d.Approve) != 0 || len(d.Remove) != 0 {
		t.Errorf("n03 removing: approve %v, remove %v; want nothing", d.Approve, d.Remove)
	}
	if c := stalledOf(d); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "n03 (left the selector") {
		t.Errorf("Stalled with n03 removing past the deadline: %s %s", c.Status, c.Message)
	}

	// Removed: its NodeHooks goes, and n02 has the slot.
	nhs[2].Status = v1alpha1.NodeHooksStatus{Phase: v1alpha1.NodeRemoved}
	d = Decide(hh, ns, nhs, t0)
	if !slices.Equal(names(d.Delete), nhNames("n03")) || !slices.Equal(d.Approve, nhNames("n02")) {
		t.Errorf("n03 removed: delete %v, approve %v; want n03 deleted, n02 approved", names(d.Delete), d.Approve)
	}

	// n03 back before its agent removed anything: approved again (the
	// patch clears spec.remove), at no cost, being done.
	ns[2].Labels = workers
	for i := range ns {
		ns[i].Labels = workers
	}
	nhs[2].Status = v1alpha1.NodeHooksStatus{AppliedHash: hashB, Phase: v1alpha1.NodeSucceeded}
	nhs[2].Spec.HooksHash = hashB
	nhs[1].Spec.HooksHash, nhs[1].Status = hashB, v1alpha1.NodeHooksStatus{AppliedHash: hashB, Phase: v1alpha1.NodeSucceeded}
	d = Decide(hh, ns, nhs, t0)
	if !slices.Equal(d.Approve, nhNames("n03")) {
		t.Errorf("n03 back with its removal approved: approve %v; want n03 approved again", d.Approve)
	}
}

// A node that leaves one HostHooks for another is disrupted once: the
// removal of the first goes before its rollout, and the second approves
// the node while it removes, with no slot of its own.
func TestDecideRelabelAcrossPools(t *testing.T) {
	p := &pool{t: t, nodes: nodes(2, map[string]string{"pool": "x"})}
	x := named("x", withSelector(map[string]string{"pool": "x"}))
	y := named("y", withSelector(map[string]string{"pool": "y"}), withHooks(hooksB))
	p.hhs = []*v1alpha1.HostHooks{x, y}
	for range 4 {
		p.decide(x)
		p.decide(y)
		p.agents()
	}
	if got := p.approvedFor(x); !slices.Equal(got, []string{"n01", "n02"}) {
		t.Fatalf("x approved on %v", got)
	}
	// n01 moves to y, as x's hooks change.
	p.nodes[slices.IndexFunc(p.nodes, func(n Node) bool { return n.Name == "n01" })].Labels = map[string]string{"pool": "y"}
	x.Spec.Hooks = hooksB
	if d := p.decide(x); !slices.Equal(d.Remove, []string{v1alpha1.NodeHooksName("x", "n01")}) || len(d.Approve) != 0 {
		t.Fatalf("x's change: approve %v, remove %v; want the removal of n01 first, the change waiting", d.Approve, d.Remove)
	}
	// n01 is down for x: y approves it with no slot of its own.
	if d := p.decide(y); !slices.Equal(d.Approve, []string{v1alpha1.NodeHooksName("y", "n01")}) {
		t.Fatalf("y: approve %v; want n01", d.Approve)
	}
	if got := p.unavailable(); !slices.Equal(got, []string{"n01"}) {
		t.Errorf("unavailable: %v; want n01 only", got)
	}
	for range 4 {
		p.agents()
		p.decide(x)
		p.decide(y)
	}
	if got := countsOf(x.Status); got != (counts{1, 1, 1, 0, v1alpha1.PhaseComplete}) {
		t.Errorf("x: %+v", got)
	}
	if got := countsOf(y.Status); got != (counts{1, 1, 1, 0, v1alpha1.PhaseComplete}) {
		t.Errorf("y: %+v", got)
	}
}

// A node that left hh keeps counting against hh's budget, and keeps its
// NodeHooks, after it removed hh's hooks while it still removes another
// HostHooks': hh's part done is no free slot while the node is down.
func TestDecideRelabelOutCountsTillAllRemoved(t *testing.T) {
	hh := hostHooks(withSelector(workers), withHooks(hooksB))
	ns := nodes(3, workers)
	ns[slices.IndexFunc(ns, func(n Node) bool { return n.Name == "n03" })] = Node{Name: "n03", Busy: []string{"other"}}
	nhs := []v1alpha1.NodeHooks{
		nodeHooks("n01", hashB, hashB, v1alpha1.NodeSucceeded),
		nodeHooks("n02", hashA, hashA, v1alpha1.NodeSucceeded),
		nodeHooks("n03", hashA, "", v1alpha1.NodeRemoved),
	}
	nhs[2].Spec.Remove = true
	d := Decide(hh, ns, nhs, t0)
	if len(d.Delete) != 0 || len(d.Approve) != 0 {
		t.Errorf("n03 removed hh's hooks and is busy for another: delete %v, approve %v; want nothing", names(d.Delete), d.Approve)
	}
	ns[slices.IndexFunc(ns, func(n Node) bool { return n.Name == "n03" })].Busy = nil
	d = Decide(hh, ns, nhs, t0)
	if !slices.Equal(names(d.Delete), nhNames("n03")) || !slices.Equal(d.Approve, nhNames("n02")) {
		t.Errorf("n03 done: delete %v, approve %v; want n03 deleted, n02 approved", names(d.Delete), d.Approve)
	}
}

// TestStatusWaitGrowsWithTheCluster: a HostHooks' status, which every
// agent watches, is written at most once a StatusInterval, and in a large
// cluster at most once StatusIntervalPerNode per node.
func TestStatusWaitGrowsWithTheCluster(t *testing.T) {
	for _, tt := range []struct {
		nodes int
		want  time.Duration // the wait right after a write
	}{
		{3, DefaultStatusInterval},
		{1000, DefaultStatusInterval},
		{10000, 10 * time.Second},
	} {
		r := &Reconciler{}
		if w := r.statusWait("hh", t0, tt.nodes); w != 0 {
			t.Errorf("%d nodes: the first write waits %v, want none", tt.nodes, w)
		}
		if w := r.statusWait("hh", t0.Add(time.Millisecond), tt.nodes); w != tt.want-time.Millisecond {
			t.Errorf("%d nodes: a write 1ms after it waits %v, want %v", tt.nodes, w, tt.want-time.Millisecond)
		}
		if w := r.statusWait("hh", t0.Add(tt.want), tt.nodes); w != 0 {
			t.Errorf("%d nodes: a write %v after it waits %v, want none", tt.nodes, tt.want, w)
		}
	}
}
