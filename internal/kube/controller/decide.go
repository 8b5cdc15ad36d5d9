// Package controller is hostprov's controller on Kubernetes. For each
// HostHooks it keeps a NodeHooks for every node the selector matches,
// approves nodes for the current hooks as the rollout allows, sums the
// NodeHooks up into the HostHooks status, and holds the HostHooks'
// deletion until the agents pruned its units from the nodes.
//
// Every decision is made by one pure function, Decide, over the HostHooks,
// the nodes (with the HostHooks each is busy for, by BusyNodes) and the
// HostHooks' NodeHooks as the cache has them; the Reconciler only reads
// the cache and carries the decision out. That keeps a reconcile
// O(nodes + NodeHooks) with no request but the writes it decides on, and
// lets the rules be tested without a server.
package controller

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// Node is what the controller needs of a Node: its name and labels, which
// decide whether a HostHooks selects it, and whether it is Ready.
type Node struct {
	Name   string
	Labels map[string]string
	// NotReady says why the node is not Ready, "" when it is: its Ready
	// condition is False or Unknown. A node with no Ready condition (no
	// kubelet ever reported) counts as Ready: whether an agent runs there
	// is up to the agent's own report. NotReadySince is when the
	// condition last changed.
	NotReady      string
	NotReadySince time.Time
	// Busy names the HostHooks the node is unavailable for (see
	// BusyNodes): approved for their current hooks and not done with
	// them, or removing their units. The budget of a rollout is the
	// node's, not one HostHooks': a node busy for another HostHooks takes
	// a slot of every HostHooks that selects it. Decide passes over its
	// own HostHooks' name here, which it counts from its NodeHooks.
	Busy []string
}

// Decision is what a reconcile of one HostHooks does, in this order:
// add the finalizer, create the NodeHooks, approve nodes, delete the
// NodeHooks, write the status (and record Events), remove the finalizer.
type Decision struct {
	// AddFinalizer is set when the HostHooks lacks v1alpha1.Finalizer and
	// is not being deleted.
	AddFinalizer bool
	// Create are the NodeHooks of matched nodes that have none yet, with
	// no hooks approved.
	Create []*v1alpha1.NodeHooks
	// Approve names the NodeHooks (existing ones, or ones in Create) whose
	// spec.hooksHash is to be set to Status.HooksHash, spec.approvedAt
	// to the time of the decision, and spec.remove cleared, in node-name
	// order.
	Approve []string
	// Remove names the NodeHooks of nodes the HostHooks no longer
	// selects whose spec.remove is to be set, and spec.approvedAt to the
	// time of the decision: their agents may prune the units now.
	Remove []string
	// Delete are NodeHooks of nodes that are gone, or that the HostHooks
	// no longer selects and whose agent removed the hooks, or a second
	// one of a node.
	Delete []*v1alpha1.NodeHooks
	// Status is the HostHooks' status; StatusChanged says whether it
	// differs from the one the HostHooks has.
	Status        v1alpha1.HostHooksStatus
	StatusChanged bool
	// Events are the transitions of the HostHooks' conditions that
	// Status makes, to be recorded as Kubernetes Events when it is
	// written.
	Events []Event
	// Orphaned are the nodes that still have the hooks of a HostHooks
	// being deleted when its prune timeout ran out: the finalizer is
	// removed all the same, after the status says so.
	Orphaned []string
	// RemoveFinalizer is set when the HostHooks is being deleted and no
	// node that exists has its hooks any more, or the prune timeout ran
	// out.
	RemoveFinalizer bool
	// RequeueAfter is how long until the next deadline (of a node's
	// progress, or of the prune timeout) passes, when one is ahead: then
	// the decision may change with no event to say so.
	RequeueAfter time.Duration
}

// Defaults of the time limits of a HostHooks.
const (
	DefaultProgressDeadline = 600 * time.Second
	DefaultPruneTimeout     = 900 * time.Second
)

// Decide decides what to do for hh, given every node and the NodeHooks of
// hh (those whose spec.hostHooks names it), at time now (the time of a
// condition that changes, and of the deadlines).
//
// The rules, with H the hash of the current hooks: every node the
// selector matches gets a NodeHooks, named v1alpha1.NodeHooksName, as its
// agent watches it; one of another name (an earlier naming) is deleted. A
// matched node is unavailable when it is approved for H (spec.hooksHash
// == H) and is not done with H: it has not applied H, or H's units still
// start. A node that applied H and failed is done: it counts against the
// failure threshold, not against maxUnavailable, so that a threshold of
// at least maxUnavailable lets the rollout go on past it. Unless the
// rollout is paused, more nodes failed than the failure threshold allows,
// or hh is being deleted, nodes not approved for H are approved in
// node-name order while fewer than maxUnavailable are unavailable.
//
// A matched node that is not Ready is unavailable too, and is not
// approved until it is Ready again.
//
// The budget is shared: a matched node that is busy for another HostHooks
// (Node.Busy) is unavailable for hh too, so that HostHooks over the same
// nodes disrupt no more of them at once than each one's maxUnavailable,
// counted over the nodes it selects; such a node is approved with no slot
// of its own, since it takes one already. A node hh no longer selects
// keeps hh's units until hh approves their removal (spec.remove), within
// the same budget, and is unavailable for hh from then until its agent
// removed them (phase Removed) and it is busy for no other HostHooks: its
// NodeHooks is deleted only then. Removals are approved before the current hooks, in
// node-name order: a node that leaves hh is mostly on its way to another
// HostHooks, which waits for it. Neither pause nor the failure threshold
// stops a removal: they are about the current hooks.
//
// A node not done with H holds the rollout when it is not Ready for longer
// than the progress deadline, when its agent never reported (its
// NodeHooks has no status phase) within the progress deadline of the
// NodeHooks' creation, or when it is approved and not done past the
// progress deadline since its approval; and, once the failure threshold
// is exceeded, a node that failed holds it. The Stalled condition names
// such nodes and why.
//
// A NodeHooks whose node is gone is deleted, and so is one whose node the
// selector no longer matches once the agent removed the hooks (phase
// Removed) and the node is busy for no other HostHooks, or if it never
// applied any (no appliedHash), and a second one of a node. A HostHooks being deleted keeps its finalizer until every
// NodeHooks whose node exists is in that state, or until its prune
// timeout ran out: then the nodes left are reported orphaned.
//
// A NodeHooks controlled by another object (one left by an earlier
// HostHooks of the same name, which the garbage collector is deleting) is
// neither counted nor replaced while it is there. A NodeHooks with no
// controller is treated as hh's own.
func Decide(hh *v1alpha1.HostHooks, nodes []Node, nhs []v1alpha1.NodeHooks, now time.Time) Decision {
	deleting := hh.DeletionTimestamp != nil
	hasFinalizer := slices.Contains(hh.Finalizers, v1alpha1.Finalizer)
	if deleting && !hasFinalizer {
		// Something else holds the deletion; nothing is left for the
		// controller to do, and the status is of no more use.
		return Decision{}
	}
	k := newDecider(hh, nodes, nhs, now)
	k.d.AddFinalizer = !deleting && !hasFinalizer
	for _, n := range k.matched {
		k.matchedNode(n)
	}
	k.leftNodes(nhs)
	k.approve()
	k.deletion()
	k.status()
	if !k.next.IsZero() {
		k.d.RequeueAfter = k.next.Sub(now)
	}
	return k.d
}

// candidate is a NodeHooks that may be approved: for the current hooks
// (Decision.Approve), or for the removal of the hooks (Decision.Remove).
type candidate struct {
	name string
	nh   *v1alpha1.NodeHooks // nil for one in Decision.Create
	// busy: unavailable for another HostHooks, so counted already.
	busy bool
}

// decider is one Decide in the making: what it read of its arguments, and
// the counts and lists its passes over the nodes gather.
type decider struct {
	hh        *v1alpha1.HostHooks
	now       time.Time
	h         string // the hash of the current hooks
	deleting  bool
	threshold int
	deadline  time.Duration
	// next is the earliest deadline still ahead, zero for none.
	next time.Time
	d    Decision

	byName map[string]Node
	// own is hh's NodeHooks by node; foreign the nodes with another's.
	own            map[string]*v1alpha1.NodeHooks
	foreign        map[string]bool
	matched        []Node // by name
	isMatched      map[string]bool
	claimed        map[string]bool // NodeHooks names of matched nodes
	specErr        error
	maxUnavailable int

	candidates, removals []candidate
	failedNodes          []*v1alpha1.NodeHooks
	holds                []string // "NODE (why)" of the nodes that hold the rollout
	// late is how many of holds are past the progress deadline (the
	// failed nodes of a degraded rollout come after them).
	late               int
	pending            []string // nodes whose hooks a deletion waits for
	leaving            map[string]bool
	updated, succeeded int
	unavail            int
	settled            bool // every matched node applied H, and it finished
}

func newDecider(hh *v1alpha1.HostHooks, nodes []Node, nhs []v1alpha1.NodeHooks, now time.Time) *decider {
	k := &decider{hh: hh, now: now, h: v1alpha1.HooksHash(hh.Spec.Hooks), deleting: hh.DeletionTimestamp != nil,
		deadline: seconds(hh.Spec.Rollout.ProgressDeadlineSeconds, DefaultProgressDeadline), settled: true,
		byName: make(map[string]Node, len(nodes)), own: make(map[string]*v1alpha1.NodeHooks, len(nhs)),
		foreign: map[string]bool{}, isMatched: map[string]bool{}, claimed: map[string]bool{}, leaving: map[string]bool{}}
	if ft := hh.Spec.Rollout.FailureThreshold; ft != nil && *ft > 0 {
		k.threshold = int(*ft)
	}
	for _, n := range nodes {
		k.byName[n.Name] = n
	}
	for i := range nhs {
		nh := &nhs[i]
		if !owned(hh, nh) {
			k.foreign[nh.Spec.NodeName] = true
			continue
		}
		// The agents watch a NodeHooks by its name (the API server
		// indexes watches by name): one of another name, of an
		// earlier naming, is never read, and is replaced.
		if nh.Name == v1alpha1.NodeHooksName(hh.Name, nh.Spec.NodeName) {
			k.own[nh.Spec.NodeName] = nh
		}
	}
	var sel labels.Selector
	sel, k.specErr = selector(hh.Spec.NodeSelector)
	k.maxUnavailable = 1
	if k.specErr != nil {
		return k
	}
	for _, n := range nodes {
		if sel.Matches(labels.Set(n.Labels)) {
			k.matched = append(k.matched, n)
			k.isMatched[n.Name] = true
		}
	}
	slices.SortFunc(k.matched, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	k.maxUnavailable, k.specErr = maxUnavailableOf(hh.Spec.Rollout.MaxUnavailable, len(k.matched))
	return k
}

// busyElsewhere reports whether n is unavailable for another HostHooks.
func (k *decider) busyElsewhere(n Node) bool {
	return slices.ContainsFunc(n.Busy, func(b string) bool { return b != k.hh.Name })
}

// holdPast holds the rollout with why() when since+deadline has passed,
// and otherwise notes that deadline as one to wake up for. A time the API
// server did not set is no deadline.
func (k *decider) holdPast(since time.Time, why func(age time.Duration) string) {
	if since.IsZero() {
		return
	}
	if due := since.Add(k.deadline); k.now.Before(due) {
		k.ahead(due)
		return
	}
	k.holds = append(k.holds, why(round(k.now.Sub(since))))
}

// ahead notes due as a deadline to wake up for.
func (k *decider) ahead(due time.Time) {
	if k.next.IsZero() || due.Before(k.next) {
		k.next = due
	}
}

// approvedAt is when nh was last approved, or created for one approved by
// a controller that did not record it.
func approvedAt(nh *v1alpha1.NodeHooks) time.Time {
	if nh.Spec.ApprovedAt != nil {
		return nh.Spec.ApprovedAt.Time
	}
	return nh.CreationTimestamp.Time
}

// matchedNode counts a node the selector matches, makes its NodeHooks if
// it has none, makes it a candidate if it is not approved for the current
// hooks, and holds the rollout for it past its deadline.
func (k *decider) matchedNode(n Node) {
	// A node that is not Ready is unavailable, whatever it did: it is
	// approved for nothing, and takes a slot of maxUnavailable, as the
	// machine-config-operator counts it.
	notReady := n.NotReady != ""
	busy := k.busyElsewhere(n)
	if notReady || busy {
		k.unavail++
	}
	nh := k.own[n.Name]
	if nh == nil {
		k.settled = false
		if k.foreign[n.Name] || k.deleting {
			return
		}
		c := newNodeHooks(k.hh, n.Name)
		k.d.Create = append(k.d.Create, c)
		if !notReady {
			k.candidates = append(k.candidates, candidate{name: c.Name, busy: busy})
		}
		return
	}
	k.claimed[nh.Name] = true
	if nh.Status.AppliedHash == k.h && nh.Status.Phase != v1alpha1.NodeRemoved {
		// A node that removed the hooks (it left the selector and came
		// back) has them no more, whatever it applied last.
		k.updated++
		switch nh.Status.Phase {
		case v1alpha1.NodeSucceeded:
			k.succeeded++
		case v1alpha1.NodeFailed:
			k.failedNodes = append(k.failedNodes, nh)
		}
	}
	done := doneAt(nh, k.h)
	if !done {
		k.settled = false
	}
	// A node that left the selector and came back has its removal
	// approved still: it is approved again, which clears it, before its
	// agent could prune on a later relabelling with no approval.
	approvedH := nh.Spec.HooksHash == k.h && !nh.Spec.Remove
	switch {
	case notReady:
	case !approvedH:
		k.candidates = append(k.candidates, candidate{nh.Name, nh, busy})
	case !done && !busy:
		k.unavail++
	}
	if done || k.deleting {
		return
	}
	switch {
	case notReady:
		k.holdPast(n.NotReadySince, func(age time.Duration) string {
			return fmt.Sprintf("%s (not Ready for %s: %s)", n.Name, age, n.NotReady)
		})
	case nh.Status.Phase == "" && !nh.CreationTimestamp.IsZero():
		k.holdPast(nh.CreationTimestamp.Time, func(age time.Duration) string {
			return fmt.Sprintf("%s (no agent: none has reported on the node in %s)", n.Name, age)
		})
	case approvedH:
		k.holdPast(approvedAt(nh), func(age time.Duration) string {
			phase := string(nh.Status.Phase)
			if nh.Status.AppliedHash != k.h {
				phase += ", the current hooks not applied"
			}
			return fmt.Sprintf("%s (approved %s ago and not done: %s)", n.Name, age, phase)
		})
	}
}

// leftNodes goes through what is left of hh's own NodeHooks: those of
// nodes it no longer matches (or that are gone, or a second one of a
// node). While hh is being deleted, its finalizer waits for all of them,
// and the garbage collector deletes them after it. A node that left the
// selector waits for the removal of its units to be approved.
func (k *decider) leftNodes(nhs []v1alpha1.NodeHooks) {
	for i := range nhs {
		nh := &nhs[i]
		if !owned(k.hh, nh) {
			continue
		}
		if nh.Name != v1alpha1.NodeHooksName(k.hh.Name, nh.Spec.NodeName) {
			k.d.Delete = append(k.d.Delete, nh)
			continue
		}
		node, nodeExists := k.byName[nh.Spec.NodeName]
		if k.deleting {
			if nodeExists && !removed(nh) && !slices.Contains(k.pending, nh.Spec.NodeName) {
				k.pending = append(k.pending, nh.Spec.NodeName)
			}
			continue
		}
		if k.claimed[nh.Name] || k.specErr != nil {
			continue
		}
		if !nodeExists || k.isMatched[nh.Spec.NodeName] {
			k.d.Delete = append(k.d.Delete, nh)
			continue
		}
		// A node that left hh with hh's hooks counts against hh's budget
		// while it is disrupted: removing hh's hooks, or busy for another
		// HostHooks (removing theirs too, mostly). Its NodeHooks stays
		// till then, so that the count does not drop as hh's part is
		// done and another's is not. One that never applied hh's hooks
		// is none of hh's business.
		busy := k.busyElsewhere(node)
		neverApplied := nh.Status.AppliedHash == "" && nh.Status.Phase != v1alpha1.NodeRemoved
		if neverApplied || removed(nh) && !busy {
			k.d.Delete = append(k.d.Delete, nh)
			continue
		}
		removing := nh.Spec.Remove && !removed(nh)
		if (removing || busy) && !k.leaving[nh.Spec.NodeName] {
			k.leaving[nh.Spec.NodeName] = true
			k.unavail++
		}
		switch {
		case removed(nh):
		case !nh.Spec.Remove:
			// Not while the node is not Ready: its agent could not act
			// on it, as it could not apply.
			if node.NotReady == "" {
				k.removals = append(k.removals, candidate{nh.Name, nh, busy})
			}
		default:
			k.holdPast(approvedAt(nh), func(age time.Duration) string {
				return fmt.Sprintf("%s (left the selector; the removal of the hooks approved %s ago and not done: %s)",
					nh.Spec.NodeName, age, nh.Status.Phase)
			})
		}
	}
	slices.SortFunc(k.removals, func(a, b candidate) int { return strings.Compare(a.nh.Spec.NodeName, b.nh.Spec.NodeName) })
}

// degraded reports whether more nodes failed than the threshold allows.
func (k *decider) degraded() bool { return len(k.failedNodes) > k.threshold }

// approve approves removals, then nodes for the current hooks, while
// fewer than maxUnavailable are unavailable. A candidate busy for another
// HostHooks takes no further slot: it is approved whatever the count, and
// the node is disrupted once for both.
func (k *decider) approve() {
	k.late = len(k.holds)
	if k.degraded() && !k.deleting {
		for _, nh := range k.failedNodes {
			k.holds = append(k.holds, nh.Spec.NodeName+" (failed the current hooks)")
		}
	}
	if k.specErr != nil || k.deleting {
		return
	}
	for _, c := range k.removals {
		if !c.busy && k.unavail >= k.maxUnavailable {
			continue
		}
		k.d.Remove = append(k.d.Remove, c.name)
		if !c.busy && !removed(c.nh) {
			k.unavail++
		}
	}
	if k.degraded() || k.hh.Spec.Rollout.Pause {
		return
	}
	for _, c := range k.candidates {
		if !c.busy && k.unavail >= k.maxUnavailable {
			continue
		}
		k.d.Approve = append(k.d.Approve, c.name)
		if !c.busy && (c.nh == nil || !doneAt(c.nh, k.h)) {
			k.unavail++
		}
	}
}

// deletion decides the finalizer of a HostHooks being deleted: removed
// once every node that exists pruned its hooks, or once the prune timeout
// has passed, the nodes left then reported orphaned.
func (k *decider) deletion() {
	if !k.deleting {
		return
	}
	slices.Sort(k.pending)
	if len(k.pending) > 0 {
		due := k.hh.DeletionTimestamp.Add(seconds(k.hh.Spec.PruneTimeoutSeconds, DefaultPruneTimeout))
		if k.now.Before(due) {
			k.ahead(due)
		} else {
			k.d.Orphaned = k.pending
		}
	}
	k.d.RemoveFinalizer = len(k.pending) == 0 || k.d.Orphaned != nil
}

// owned says whether nh is hh's: controlled by hh, or by nothing.
func owned(hh *v1alpha1.HostHooks, nh *v1alpha1.NodeHooks) bool {
	ref := metav1.GetControllerOf(nh)
	return ref == nil || ref.UID == hh.UID
}

// list is the first MaxErrorNodes of items, and how many more there are.
func list(items []string) string {
	if len(items) <= v1alpha1.MaxErrorNodes {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:v1alpha1.MaxErrorNodes], ", "), len(items)-v1alpha1.MaxErrorNodes)
}

// seconds is a number of seconds as a duration, or def when unset.
func seconds(s *int32, def time.Duration) time.Duration {
	if s == nil || *s <= 0 {
		return def
	}
	return time.Duration(*s) * time.Second
}

func round(d time.Duration) time.Duration { return d.Round(time.Second) }

// doneAt says whether nh applied the hooks of hash h and is done with
// them: they succeeded or failed.
func doneAt(nh *v1alpha1.NodeHooks, h string) bool {
	return nh.Status.AppliedHash == h && (nh.Status.Phase == v1alpha1.NodeSucceeded || nh.Status.Phase == v1alpha1.NodeFailed)
}

// removed says whether the node of nh has none of the HostHooks' units:
// the agent pruned them, or it never applied any.
func removed(nh *v1alpha1.NodeHooks) bool {
	return nh.Status.Phase == v1alpha1.NodeRemoved || nh.Status.AppliedHash == ""
}

// selector is the label selector of a HostHooks: unset selects every node,
// as an empty one does.
func selector(ls *metav1.LabelSelector) (labels.Selector, error) {
	if ls == nil {
		return labels.Everything(), nil
	}
	s, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, fmt.Errorf("spec.nodeSelector: %v", err)
	}
	return s, nil
}

// maxUnavailableOf is spec.rollout.maxUnavailable for matched nodes: a
// count, or a percentage of them rounded down; at least 1, and 1 when
// unset.
func maxUnavailableOf(v *intstr.IntOrString, matched int) (int, error) {
	if v == nil {
		return 1, nil
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, matched, false)
	if err != nil {
		return 0, fmt.Errorf("spec.rollout.maxUnavailable: %v", err)
	}
	return max(n, 1), nil
}

// newNodeHooks is the NodeHooks of node for hh, approved for nothing yet.
// Its owner reference lets the garbage collector delete it after hh; it
// does not block hh's deletion, which the finalizer holds instead.
func newNodeHooks(hh *v1alpha1.HostHooks, node string) *v1alpha1.NodeHooks {
	yes := true
	return &v1alpha1.NodeHooks{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "NodeHooks"},
		ObjectMeta: metav1.ObjectMeta{
			Name: v1alpha1.NodeHooksName(hh.Name, node),
			Labels: map[string]string{
				v1alpha1.LabelNode:      v1alpha1.LabelValue(node),
				v1alpha1.LabelHostHooks: v1alpha1.LabelValue(hh.Name),
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "HostHooks",
				Name: hh.Name, UID: hh.UID, Controller: &yes,
			}},
		},
		Spec: v1alpha1.NodeHooksSpec{NodeName: node, HostHooks: hh.Name},
	}
}
