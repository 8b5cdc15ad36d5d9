package controller

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// workers are the labels of a worker node.
var workers = map[string]string{"role": "worker"}

// decideCases are what Decide is given, and what it decides: the writes
// and the counts of the status.
var decideCases = []struct {
	name  string
	hh    *v1alpha1.HostHooks
	nodes []Node
	nhs   []v1alpha1.NodeHooks

	addFinalizer, removeFinalizer bool
	create, approve, delete       []string
	counts                        counts
}{{
	name:         "a new HostHooks gets its finalizer and a NodeHooks for every node; the first node is approved",
	hh:           hostHooks(noFinalizer),
	nodes:        nodes(3, nil),
	addFinalizer: true,
	create:       nhNames("n01", "n02", "n03"),
	approve:      nhNames("n01"),
	counts:       counts{3, 0, 0, 0, v1alpha1.PhaseProgressing},
}, {
	name:    "the selector picks the nodes by label",
	hh:      hostHooks(withSelector(workers)),
	nodes:   append(nodes(2, workers), Node{Name: "cp", Labels: map[string]string{"role": "control-plane"}}, Node{Name: "bare"}),
	create:  nhNames("n01", "n02"),
	approve: nhNames("n01"),
	counts:  counts{2, 0, 0, 0, v1alpha1.PhaseProgressing},
}, {
	name:    "an empty selector selects every node",
	hh:      hostHooks(withSelector(nil)),
	nodes:   []Node{{Name: "x", Labels: workers}, {Name: "y"}},
	create:  nhNames("x", "y"),
	approve: nhNames("x"),
	counts:  counts{2, 0, 0, 0, v1alpha1.PhaseProgressing},
}, {
	name: "matchExpressions are a selector too",
	hh: hostHooks(func(hh *v1alpha1.HostHooks) {
		hh.Spec.NodeSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "role", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"control-plane"}}}}
	}),
	nodes:   []Node{{Name: "cp", Labels: map[string]string{"role": "control-plane"}}, {Name: "w", Labels: workers}, {Name: "bare"}},
	create:  nhNames("bare", "w"),
	approve: nhNames("bare"),
	counts:  counts{2, 0, 0, 0, v1alpha1.PhaseProgressing},
}, {
	name:    "maxUnavailable as a count",
	hh:      hostHooks(withMaxUnavailable(intstr.FromInt32(3))),
	nodes:   nodes(5, nil),
	create:  nhNames("n01", "n02", "n03", "n04", "n05"),
	approve: nhNames("n01", "n02", "n03"),
	counts:  counts{5, 0, 0, 0, v1alpha1.PhaseProgressing},
}, {
	name:    "maxUnavailable above the node count approves all",
	hh:      hostHooks(withMaxUnavailable(intstr.FromInt32(10))),
	nodes:   nodes(2, nil),
	create:  nhNames("n01", "n02"),
	approve: nhNames("n01", "n02"),
	counts:  counts{2, 0, 0, 0, v1alpha1.PhaseProgressing},
}, {
	name:    "maxUnavailable as a percentage rounds down: 25% of 10 is 2",
	hh:      hostHooks(withMaxUnavailable(intstr.FromString("25%"))),
	nodes:   nodes(10, nil),
	create:  nhNames("n01", "n02", "n03", "n04", "n05", "n06", "n07", "n08", "n09", "n10"),
	approve: nhNames("n01", "n02"),
	counts:  counts{10, 0, 0, 0, v1alpha1.PhaseProgressing},
}, {
	name:    "maxUnavailable as a percentage is at least 1: 5% of 10",
	hh:      hostHooks(withMaxUnavailable(intstr.FromString("5%"))),
	nodes:   nodes(10, nil),
	create:  nhNames("n01", "n02", "n03", "n04", "n05", "n06", "n07", "n08", "n09", "n10"),
	approve: nhNames("n01"),
	counts:  counts{10, 0, 0, 0, v1alpha1.PhaseProgressing},
}, {
	name:    "maxUnavailable 100% approves every node at once",
	hh:      hostHooks(withMaxUnavailable(intstr.FromString("100%"))),
	nodes:   nodes(3, nil),
	create:  nhNames("n01", "n02", "n03"),
	approve: nhNames("n01", "n02", "n03"),
	counts:  counts{3, 0, 0, 0, v1alpha1.PhaseProgressing},
}, {
	name:    "maxUnavailable as a percentage of the matched nodes only: 50% of 2",
	hh:      hostHooks(withSelector(workers), withMaxUnavailable(intstr.FromString("50%"))),
	nodes:   append(nodes(2, workers), Node{Name: "o1"}, Node{Name: "o2"}, Node{Name: "o3"}, Node{Name: "o4"}),
	create:  nhNames("n01", "n02"),
	approve: nhNames("n01"),
	counts:  counts{2, 0, 0, 0, v1alpha1.PhaseProgressing},
}, {
	name:  "an approved node that has not applied yet is unavailable: nothing more is approved",
	nodes: nodes(3, nil),
	nhs: []v1alpha1.NodeHooks{
		nodeHooks("n01", hashA, "", ""),
		nodeHooks("n02", "", "", v1alpha1.NodePending),
		nodeHooks("n03", "", "", ""),
	},
	counts: counts{3, 0, 0, 0, v1alpha1.PhaseProgressing},
}, {
	name:  "a node applying the current hooks is unavailable",
	nodes: nodes(2, nil),
	nhs: []v1alpha1.NodeHooks{
		nodeHooks("n01", hashA, hashA, v1alpha1.NodeApplying),
		nodeHooks("n02", "", "", ""),
	},
	counts: counts{2, 1, 0, 0, v1alpha1.PhaseProgressing},
}, {
	name:  "once the approved node succeeded, the next one in name order is approved",
	nodes: nodes(3, nil),
	nhs: []v1alpha1.NodeHooks{
		nodeHooks("n01", hashA, hashA, v1alpha1.NodeSucceeded),
		nodeHooks("n03", "", "", ""),
		nodeHooks("n02", "", "", ""),
	},
	approve: nhNames("n02"),
	counts:  counts{3, 1, 1, 0, v1alpha1.PhaseProgressing},
}, {
	name:   "every node succeeded: complete, nothing to do",
	nodes:  nodes(2, nil),
	nhs:    []v1alpha1.NodeHooks{nodeHooks("n01", hashA, hashA, v1alpha1.NodeSucceeded), nodeHooks("n02", hashA, hashA, v1alpha1.NodeSucceeded)},
	counts: counts{2, 2, 2, 0, v1alpha1.PhaseComplete},
}, {
	name:   "no node matched: complete",
	hh:     hostHooks(withSelector(workers)),
	nodes:  nodes(2, nil),
	counts: counts{0, 0, 0, 0, v1alpha1.PhaseComplete},
}, {
	name:  "a failed node stops the rollout at the default threshold of 0",
	hh:    hostHooks(withMaxUnavailable(intstr.FromInt32(2))),
	nodes: nodes(3, nil),
	nhs: []v1alpha1.NodeHooks{
		nodeHooks("n01", hashA, hashA, v1alpha1.NodeFailed),
		nodeHooks("n02", "", "", ""),
		nodeHooks("n03", "", "", ""),
	},
	counts: counts{3, 1, 0, 1, v1alpha1.PhaseDegraded},
}, {
	name:  "failures up to the threshold go on, a failed node being done, not unavailable",
	hh:    hostHooks(withMaxUnavailable(intstr.FromInt32(2)), withThreshold(1)),
	nodes: nodes(4, nil),
	nhs: []v1alpha1.NodeHooks{
		nodeHooks("n01", hashA, hashA, v1alpha1.NodeFailed),
		nodeHooks("n02", "", "", ""),
		nodeHooks("n03", "", "", ""),
		nodeHooks("n04", "", "", ""),
	},
	approve: nhNames("n02", "n03"),
	counts:  counts{4, 1, 0, 1, v1alpha1.PhaseProgressing},
}, {
	name:  "more failures than the threshold stop it",
	hh:    hostHooks(withMaxUnavailable(intstr.FromInt32(5)), withThreshold(1)),
	nodes: nodes(4, nil),
	nhs: []v1alpha1.NodeHooks{
		nodeHooks("n01", hashA, hashA, v1alpha1.NodeFailed),
		nodeHooks("n02", hashA, hashA, v1alpha1.NodeFailed),
		nodeHooks("n03", "", "", ""),
		nodeHooks("n04", "", "", ""),
	},
	counts: counts{4, 2, 0, 2, v1alpha1.PhaseDegraded},
}, {
	name:  "a failure of earlier hooks does not count against the current ones",
	hh:    hostHooks(withHooks(hooksB)),
	nodes: nodes(2, nil),
	nhs: []v1alpha1.NodeHooks{
		nodeHooks("n01", hashA, hashA, v1alpha1.NodeFailed),
		nodeHooks("n02", hashA, hashA, v1alpha1.NodeSucceeded),
	},
	approve: nhNames("n01"),
	counts:  counts{2, 0, 0, 0, v1alpha1.PhaseProgressing},
}, {
	name:   "pause approves nothing",
	hh:     hostHooks(paused),
	nodes:  nodes(2, nil),
	nhs:    []v1alpha1.NodeHooks{nodeHooks("n01", hashA, hashA, v1alpha1.NodeSucceeded)},
	create: nhNames("n02"),
	counts: counts{2, 1, 1, 0, v1alpha1.PhasePaused},
}, {
	name:   "paused and complete is complete",
	hh:     hostHooks(paused),
	nodes:  nodes(1, nil),
	nhs:    []v1alpha1.NodeHooks{nodeHooks("n01", hashA, hashA, v1alpha1.NodeSucceeded)},
	counts: counts{1, 1, 1, 0, v1alpha1.PhaseComplete},
}, {
	name:  "a change of hooks mid-rollout starts again from the first node; the old hooks' approvals do not count",
	hh:    hostHooks(withHooks(hooksB)),
	nodes: nodes(3, nil),
	nhs: []v1alpha1.NodeHooks{
		nodeHooks("n01", hashA, hashA, v1alpha1.NodeSucceeded),
		nodeHooks("n02", hashA, "", v1alpha1.NodeApplying),
		nodeHooks("n03", "", "", ""),
	},
	approve: nhNames("n01"),
	counts:  counts{3, 0, 0, 0, v1alpha1.PhaseProgressing},
}, {
	name:  "a change back to hooks a node still has approves it without using up maxUnavailable",
	hh:    hostHooks(withHooks(hooksA)),
	nodes: nodes(3, nil),
	nhs: []v1alpha1.NodeHooks{
		nodeHooks("n01", hashB, hashA, v1alpha1.NodeSucceeded),
		nodeHooks("n02", hashB, hashA, v1alpha1.NodeSucceeded),
		nodeHooks("n03", hashB, hashB, v1alpha1.NodeSucceeded),
	},
	approve: nhNames("n01", "n02", "n03"),
	counts:  counts{3, 2, 2, 0, v1alpha1.PhaseProgressing},
}, {
	name:  "a node joining the selector gets a NodeHooks and waits its turn",
	hh:    hostHooks(withSelector(workers)),
	nodes: nodes(3, workers),
	nhs: []v1alpha1.NodeHooks{
		nodeHooks("n01", hashA, hashA, v1alpha1.NodeSucceeded),
		nodeHooks("n03", hashA, hashA, v1alpha1.NodeApplying),
	},
	create: nhNames("n02"),
	counts: counts{3, 2, 1, 0, v1alpha1.PhaseProgressing},
}, {
	name:  "a node leaving the selector is kept until its agent removed the hooks",
	hh:    hostHooks(withSelector(workers)),
	nodes: append(nodes(1, workers), Node{Name: "n02"}, Node{Name: "n03"}, Node{Name: "n04"}),
	nhs: []v1alpha1.NodeHooks{
		nodeHooks("n01", hashA, hashA, v1alpha1.NodeSucceeded),
		nodeHooks("n02", hashA, hashA, v1alpha1.NodeSucceeded),
		nodeHooks("n03", hashA, hashA, v1alpha1.NodeRemoved),
		nodeHooks("n04", "", "", ""),
	},
	delete: nhNames("n03", "n04"),
	counts: counts{1, 1, 1, 0, v1alpha1.PhaseComplete},
}, {
	name:  "the NodeHooks of a node that is gone is deleted",
	nodes: nodes(1, nil),
	nhs: []v1alpha1.NodeHooks{
		nodeHooks("n01", hashA, hashA, v1alpha1.NodeSucceeded),
		nodeHooks("gone", hashA, hashA, v1alpha1.NodeSucceeded),
	},
	delete: nhNames("gone"),
	counts: counts{1, 1, 1, 0, v1alpha1.PhaseComplete},
}, {
	name:  "a node that leaves is not counted, failed or not",
	hh:    hostHooks(withSelector(workers)),
	nodes: append(nodes(1, workers), Node{Name: "n02"}),
	nhs: []v1alpha1.NodeHooks{
		nodeHooks("n01", hashA, hashA, v1alpha1.NodeSucceeded),
		nodeHooks("n02", hashA, hashA, v1alpha1.NodeFailed),
	},
	counts: counts{1, 1, 1, 0, v1alpha1.PhaseComplete},
}, {
	name:  "a HostHooks being deleted approves and creates nothing and keeps its finalizer while a node has its hooks",
	hh:    hostHooks(deleting),
	nodes: nodes(4, nil),
	nhs: []v1alpha1.NodeHooks{
		nodeHooks("n01", hashA, hashA, v1alpha1.NodeRemoved),
		nodeHooks("n02", hashA, hashA, v1alpha1.NodeSucceeded),
		nodeHooks("n03", "", "", ""),
	},
	counts: counts{4, 1, 1, 0, v1alpha1.PhaseProgressing},
}, {
	name:  "a HostHooks being deleted loses its finalizer once every node removed its hooks, never had them, or is gone",
	hh:    hostHooks(deleting),
	nodes: nodes(3, nil),
	nhs: []v1alpha1.NodeHooks{
		nodeHooks("n01", hashA, hashA, v1alpha1.NodeRemoved),
		nodeHooks("n02", hashA, "", v1alpha1.NodeFailed),
		nodeHooks("n03", "", "", ""),
		nodeHooks("gone", hashA, hashA, v1alpha1.NodeSucceeded),
	},
	removeFinalizer: true,
	counts:          counts{3, 0, 0, 0, v1alpha1.PhaseProgressing},
}, {
	name:   "a node that left the selector holds a deletion too, until it removed the hooks",
	hh:     hostHooks(deleting, withSelector(workers)),
	nodes:  []Node{{Name: "n01"}},
	nhs:    []v1alpha1.NodeHooks{nodeHooks("n01", hashA, hashA, v1alpha1.NodeSucceeded)},
	counts: counts{0, 0, 0, 0, v1alpha1.PhaseComplete},
}, {
	name:  "a NodeHooks of an earlier HostHooks of the same name is neither counted nor replaced",
	nodes: nodes(2, nil),
	nhs: func() []v1alpha1.NodeHooks {
		old := nodeHooks("n01", hashA, hashA, v1alpha1.NodeFailed)
		old.OwnerReferences[0].UID = "uid-old"
		return []v1alpha1.NodeHooks{old}
	}(),
	create:  nhNames("n02"),
	approve: nhNames("n02"),
	counts:  counts{2, 0, 0, 0, v1alpha1.PhaseProgressing},
}, {
	name:  "a NodeHooks with no controller is the HostHooks' own",
	nodes: nodes(1, nil),
	nhs: func() []v1alpha1.NodeHooks {
		nh := nodeHooks("n01", hashA, hashA, v1alpha1.NodeSucceeded)
		nh.OwnerReferences = nil
		return []v1alpha1.NodeHooks{nh}
	}(),
	counts: counts{1, 1, 1, 0, v1alpha1.PhaseComplete},
}, {
	name: "an invalid selector does nothing and says so",
	hh: hostHooks(func(hh *v1alpha1.HostHooks) {
		hh.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"bad key!": "x"}}
	}),
	nodes:  nodes(2, nil),
	nhs:    []v1alpha1.NodeHooks{nodeHooks("n01", hashA, hashA, v1alpha1.NodeRemoved)},
	counts: counts{0, 0, 0, 0, v1alpha1.PhaseDegraded},
}, {
	name:   "an invalid maxUnavailable approves nothing and says so",
	hh:     hostHooks(withMaxUnavailable(intstr.FromString("many"))),
	nodes:  nodes(1, nil),
	create: nhNames("n01"),
	counts: counts{1, 0, 0, 0, v1alpha1.PhaseDegraded},
}}

// decided is what a case of decideCases checks of a decision.
type decided struct {
	AddFinalizer, RemoveFinalizer bool
	Create, Approve, Delete       []string
	Counts                        counts
}

func TestDecide(t *testing.T) {
	for _, tt := range decideCases {
		t.Run(tt.name, func(t *testing.T) {
			hh := tt.hh
			if hh == nil {
				hh = hostHooks()
			}
			d := Decide(hh, tt.nodes, tt.nhs, t0)
			got := decided{d.AddFinalizer, d.RemoveFinalizer, names(d.Create), d.Approve, names(d.Delete), countsOf(d.Status)}
			want := decided{tt.addFinalizer, tt.removeFinalizer, tt.create, tt.approve, tt.delete, tt.counts}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
			if d.Status.ObservedGeneration != hh.Generation {
				t.Errorf("observedGeneration = %d, want %d", d.Status.ObservedGeneration, hh.Generation)
			}
			if d.Status.HooksHash != v1alpha1.HooksHash(hh.Spec.Hooks) {
				t.Errorf("hooksHash = %s, want the hooks' hash", d.Status.HooksHash)
			}
			if !d.StatusChanged {
				t.Errorf("StatusChanged is false for a HostHooks with no status")
			}
		})
	}
}

// TestDecideNothing: a HostHooks being deleted without the finalizer is
// someone else's to finish.
func TestDecideNothing(t *testing.T) {
	d := Decide(hostHooks(deleting, noFinalizer), nodes(2, nil), []v1alpha1.NodeHooks{nodeHooks("n01", hashA, hashA, v1alpha1.NodeSucceeded)}, t0)
	if diff := cmp.Diff(Decision{}, d); diff != "" {
		t.Errorf("Decide (-want +got):\n%s", diff)
	}
}

// TestDecideNewNodeHooks: the NodeHooks made for a node are named, labelled
// and owned as agents and the garbage collector expect, approved for
// nothing.
func TestDecideNewNodeHooks(t *testing.T) {
	long := "node-with-a-name-longer-than-a-label-value-may-be.eu-west-1.compute.internal"
	d := Decide(hostHooks(), []Node{{Name: long}}, nil, t0)
	if len(d.Create) != 1 {
		t.Fatalf("Create = %v, want one", names(d.Create))
	}
	yes := true
	want := &v1alpha1.NodeHooks{
		TypeMeta: metav1.TypeMeta{APIVersion: "hostprov.dev/v1alpha1", Kind: "NodeHooks"},
		ObjectMeta: metav1.ObjectMeta{
			Name: v1alpha1.NodeHooksName("hh", long),
			Labels: map[string]string{
				v1alpha1.LabelNode:      v1alpha1.LabelValue(long),
				v1alpha1.LabelHostHooks: "hh",
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "hostprov.dev/v1alpha1", Kind: "HostHooks", Name: "hh", UID: "uid-hh", Controller: &yes,
			}},
		},
		Spec: v1alpha1.NodeHooksSpec{NodeName: long, HostHooks: "hh"},
	}
	if diff := cmp.Diff(want, d.Create[0]); diff != "" {
		t.Errorf("NodeHooks (-want +got):\n%s", diff)
	}
	if len(d.Create[0].Labels[v1alpha1.LabelNode]) > 63 {
		t.Errorf("node label %q is longer than a label value may be", d.Create[0].Labels[v1alpha1.LabelNode])
	}
}

// TestDecideRollout plays a whole rollout with agents that do as they are
// told: one node at a time under maxUnavailable 1, in name order, to
// Complete; then a change of hooks, with a failure on the second node,
// stops at the threshold.
func TestDecideRollout(t *testing.T) {
	hh := hostHooks()
	ns := nodes(4, nil)
	var nhs []v1alpha1.NodeHooks
	var order []string
	// agents applies on every approved node, failing on fail.
	agents := func(h, fail string) {
		for i := range nhs {
			nh := &nhs[i]
			if nh.Spec.HooksHash != "" && nh.Status.AppliedHash != nh.Spec.HooksHash {
				nh.Status.AppliedHash = nh.Spec.HooksHash
				nh.Status.Phase = v1alpha1.NodeSucceeded
				if nh.Spec.NodeName == fail && nh.Spec.HooksHash == h {
					nh.Status.Phase = v1alpha1.NodeFailed
				}
			}
		}
	}
	step := func() Decision {
		d := Decide(hh, ns, nhs, t0)
		for _, c := range d.Create {
			nhs = append(nhs, *c)
		}
		if len(d.Approve) > 1 {
			t.Fatalf("approved %v at once under maxUnavailable 1", d.Approve)
		}
		for _, name := range d.Approve {
			for i := range nhs {
				if nhs[i].Name == name {
					nhs[i].Spec.HooksHash = d.Status.HooksHash
					order = append(order, nhs[i].Spec.NodeName)
				}
			}
		}
		hh.Status = d.Status
		return d
	}
	for range 10 {
		step()
		agents(hashA, "")
	}
	if diff := cmp.Diff([]string{"n01", "n02", "n03", "n04"}, order); diff != "" {
		t.Errorf("approval order (-want +got):\n%s", diff)
	}
	if got := countsOf(hh.Status); got != (counts{4, 4, 4, 0, v1alpha1.PhaseComplete}) {
		t.Errorf("after the rollout: %+v", got)
	}

	hh.Spec.Hooks = hooksB
	hh.Generation++
	order = nil
	for range 10 {
		step()
		agents(hashB, "n02")
	}
	if diff := cmp.Diff([]string{"n01", "n02"}, order); diff != "" {
		t.Errorf("approval order of the change (-want +got):\n%s", diff)
	}
	if got := countsOf(hh.Status); got != (counts{4, 2, 1, 1, v1alpha1.PhaseDegraded}) {
		t.Errorf("after the failed change: %+v", got)
	}

	// Raising the threshold lets it go on past the failed node, one at
	// a time still: the failed node, done, takes no slot of
	// maxUnavailable 1.
	hh.Spec.Rollout.FailureThreshold = new(int32(1))
	order = nil
	for range 10 {
		step()
		agents(hashB, "n02")
	}
	if diff := cmp.Diff([]string{"n03", "n04"}, order); diff != "" {
		t.Errorf("approval order past the failure (-want +got):\n%s", diff)
	}
	if got := countsOf(hh.Status); got != (counts{4, 4, 3, 1, v1alpha1.PhaseFinishedWithFailures}) {
		t.Errorf("after the failure was allowed: %+v", got)
	}
	if got := conds(hh.Status)[v1alpha1.ConditionProgressing]; got != "False/FinishedWithFailures" {
		t.Errorf("Progressing after every node applied, one failing within the threshold: %s", got)
	}
}

// TestDecideNodeHooksByName: a node's NodeHooks is the one of today's
// name, which its agent watches; one of an earlier name, which no agent
// reads, is replaced, and is not counted.
func TestDecideNodeHooksByName(t *testing.T) {
	old := nodeHooks("n01", hashA, hashA, v1alpha1.NodeSucceeded)
	old.Name, old.UID = "hh.n01", "uid-old-name"
	d := Decide(hostHooks(), nodes(2, nil), []v1alpha1.NodeHooks{old, nodeHooks("n02", "", "", v1alpha1.NodePending)}, t0)
	if !slices.Equal(names(d.Create), nhNames("n01")) || !slices.Equal(names(d.Delete), []string{"hh.n01"}) ||
		countsOf(d.Status) != (counts{2, 0, 0, 0, v1alpha1.PhaseProgressing}) {
		t.Errorf("with a NodeHooks of the earlier name: create %v, delete %v, approve %v, %+v",
			names(d.Create), names(d.Delete), d.Approve, countsOf(d.Status))
	}
	// While the HostHooks is deleted: deleted, and not waited for, as no
	// agent reports on it.
	deleting := hostHooks(func(hh *v1alpha1.HostHooks) {
		ts := ago(time.Minute)
		hh.DeletionTimestamp = &ts
	})
	d = Decide(deleting, nodes(1, nil), []v1alpha1.NodeHooks{old}, t0)
	if !slices.Equal(names(d.Delete), []string{"hh.n01"}) || !d.RemoveFinalizer {
		t.Errorf("of a HostHooks being deleted: delete %v, finalizer removed %v; want hh.n01 deleted, the finalizer removed",
			names(d.Delete), d.RemoveFinalizer)
	}

	// Two of one node: today's name is kept, and counted once.
	d = Decide(hostHooks(), nodes(1, nil), []v1alpha1.NodeHooks{old, nodeHooks("n01", hashA, hashA, v1alpha1.NodeSucceeded)}, t0)
	if len(d.Create) != 0 || !slices.Equal(names(d.Delete), []string{"hh.n01"}) ||
		countsOf(d.Status) != (counts{1, 1, 1, 0, v1alpha1.PhaseComplete}) {
		t.Errorf("with two NodeHooks of one node: create %v, delete %v, %+v", names(d.Create), names(d.Delete), countsOf(d.Status))
	}
}

// TestDecidePruneTimeout: a deletion waits for the agents until the
// prune timeout, then reports the nodes left orphaned and lets go.
func TestDecidePruneTimeout(t *testing.T) {
	deletedAgo := func(d time.Duration, timeout *int32) *v1alpha1.HostHooks {
		return hostHooks(func(hh *v1alpha1.HostHooks) {
			ts := ago(d)
			hh.DeletionTimestamp = &ts
			hh.Spec.PruneTimeoutSeconds = timeout
		})
	}
	nhs := []v1alpha1.NodeHooks{
		nodeHooks("n01", hashA, hashA, v1alpha1.NodeSucceeded),
		nodeHooks("n02", hashA, hashA, v1alpha1.NodeRemoved),
		nodeHooks("n03", hashA, hashA, v1alpha1.NodeApplying),
	}
	d := Decide(deletedAgo(time.Minute, nil), nodes(3, nil), nhs, t0)
	if d.RemoveFinalizer || d.Orphaned != nil || d.RequeueAfter != 14*time.Minute {
		t.Errorf("a minute in: remove %v, orphaned %v, requeue %v; want the finalizer kept, back in 14m", d.RemoveFinalizer, d.Orphaned, d.RequeueAfter)
	}
	for _, hh := range []*v1alpha1.HostHooks{deletedAgo(16*time.Minute, nil), deletedAgo(time.Minute, new(int32(30)))} {
		d = Decide(hh, nodes(3, nil), nhs, t0)
		if !d.RemoveFinalizer || !slices.Equal(d.Orphaned, []string{"n01", "n03"}) || conds(d.Status)["Progressing"] != "False/Orphaned" {
			t.Errorf("past the timeout: remove %v, orphaned %v, conditions %v", d.RemoveFinalizer, d.Orphaned, conds(d.Status))
		}
		if len(d.Events) != 1 || d.Events[0].Type != "Warning" || d.Events[0].Reason != "Orphaned" || !strings.Contains(d.Events[0].Message, "n01, n03") {
			t.Errorf("events %+v, want one warning naming n01 and n03", d.Events)
		}
	}
}

// TestDecideNotReady: a node that is not Ready is approved for nothing and
// counts as unavailable, whatever it did; past the deadline it holds the
// rollout.
func TestDecideNotReady(t *testing.T) {
	notReady := func(ns []Node, name string, since time.Duration) []Node {
		for i := range ns {
			if ns[i].Name == name {
				ns[i].NotReady, ns[i].NotReadySince = "Ready is False, KubeletNotReady", t0.Add(-since)
			}
		}
		return ns
	}
	pending := func(names ...string) []v1alpha1.NodeHooks {
		var out []v1alpha1.NodeHooks
		for _, n := range names {
			out = append(out, nodeHooks(n, "", "", v1alpha1.NodePending))
		}
		return out
	}
	tests := []struct {
		name    string
		hh      *v1alpha1.HostHooks
		nodes   []Node
		nhs     []v1alpha1.NodeHooks
		approve []string
		create  []string
		stalled string
	}{{
		name:    "it takes the only slot",
		nodes:   notReady(nodes(3, nil), "n01", time.Minute),
		nhs:     pending("n01", "n02", "n03"),
		stalled: "False",
	}, {
		name:    "the next Ready node gets the other slot",
		hh:      hostHooks(withMaxUnavailable(intstr.FromInt32(2))),
		nodes:   notReady(nodes(3, nil), "n01", time.Minute),
		nhs:     pending("n01", "n02", "n03"),
		approve: nhNames("n02"),
		stalled: "False",
	}, {
		name:    "a new node that is not Ready gets its NodeHooks, not an approval",
		hh:      hostHooks(withMaxUnavailable(intstr.FromInt32(2))),
		nodes:   notReady(nodes(2, nil), "n01", time.Minute),
		create:  nhNames("n01", "n02"),
		approve: nhNames("n02"),
		stalled: "False",
	}, {
		name:  "done with the hooks, it is unavailable still, but holds nothing",
		nodes: notReady(nodes(2, nil), "n01", time.Hour),
		nhs: []v1alpha1.NodeHooks{
			nodeHooks("n01", hashA, hashA, v1alpha1.NodeSucceeded),
			nodeHooks("n02", "", "", v1alpha1.NodePending),
		},
		stalled: "False",
	}, {
		name:    "past the deadline it holds the rollout",
		nodes:   notReady(nodes(2, nil), "n01", 11*time.Minute),
		nhs:     pending("n01", "n02"),
		stalled: "True n01 (not Ready for 11m0s: Ready is False, KubeletNotReady)",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hh := tt.hh
			if hh == nil {
				hh = hostHooks()
			}
			d := Decide(hh, tt.nodes, tt.nhs, t0)
			if diff := cmp.Diff(tt.approve, d.Approve); diff != "" {
				t.Errorf("approved (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.create, names(d.Create)); diff != "" {
				t.Errorf("created (-want +got):\n%s", diff)
			}
			c := stalledOf(d)
			status, want, _ := strings.Cut(tt.stalled, " ")
			if string(c.Status) != status || !strings.Contains(c.Message, want) {
				t.Errorf("Stalled %s: %s; want %s", c.Status, c.Message, tt.stalled)
			}
		})
	}
}
