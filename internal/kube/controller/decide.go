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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
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

// Event is a Kubernetes Event about the HostHooks.
type Event struct {
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type, Reason, Message string
}

// Reasons of the HostHooks conditions.
const (
	ReasonRollingOut           = "RollingOut"
	ReasonComplete             = "Complete"
	ReasonNodesPending         = "NodesPending"
	ReasonFailureThreshold     = "FailureThresholdExceeded"
	ReasonFinishedWithFailures = "FinishedWithFailures"
	ReasonWithinThreshold      = "WithinFailureThreshold"
	ReasonPaused               = "Paused"
	ReasonNotPaused            = "NotPaused"
	ReasonDeleting             = "Deleting"
	ReasonInvalidSpec          = "InvalidSpec"
	ReasonProgressDeadline     = "ProgressDeadlineExceeded"
	ReasonNotStalled           = "NotStalled"
	ReasonOrphaned             = "Orphaned"
)

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
// selector matches gets a NodeHooks, found by its spec.nodeName (not by
// its name, which an earlier controller may have made otherwise). A
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
	var d Decision
	deleting := hh.DeletionTimestamp != nil
	hasFinalizer := slices.Contains(hh.Finalizers, v1alpha1.Finalizer)
	if deleting && !hasFinalizer {
		// Something else holds the deletion; nothing is left for the
		// controller to do, and the status is of no more use.
		return d
	}
	d.AddFinalizer = !deleting && !hasFinalizer

	h := v1alpha1.HooksHash(hh.Spec.Hooks)
	threshold := 0
	if ft := hh.Spec.Rollout.FailureThreshold; ft != nil && *ft > 0 {
		threshold = int(*ft)
	}
	deadline := seconds(hh.Spec.Rollout.ProgressDeadlineSeconds, DefaultProgressDeadline)
	// next is the earliest deadline still ahead.
	var next time.Time
	ahead := func(due time.Time) {
		if next.IsZero() || due.Before(next) {
			next = due
		}
	}

	byName := make(map[string]Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	// hh's own NodeHooks by node, and the nodes that have another's.
	own := make(map[string]*v1alpha1.NodeHooks, len(nhs))
	foreign := make(map[string]bool)
	for i := range nhs {
		nh := &nhs[i]
		if !owned(hh, nh) {
			foreign[nh.Spec.NodeName] = true
			continue
		}
		if cur := own[nh.Spec.NodeName]; cur == nil || preferred(hh, nh, cur) {
			own[nh.Spec.NodeName] = nh
		}
	}

	sel, specErr := selector(hh.Spec.NodeSelector)
	var matched []Node
	if specErr == nil {
		for _, n := range nodes {
			if sel.Matches(labels.Set(n.Labels)) {
				matched = append(matched, n)
			}
		}
		slices.SortFunc(matched, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	}
	maxUnavailable := 1
	if specErr == nil {
		maxUnavailable, specErr = maxUnavailableOf(hh.Spec.Rollout.MaxUnavailable, len(matched))
	}

	type candidate struct {
		name string
		nh   *v1alpha1.NodeHooks // nil for one in Create
		// busy: unavailable for another HostHooks, so counted already.
		busy bool
	}
	busyElsewhere := func(n Node) bool {
		for _, b := range n.Busy {
			if b != hh.Name {
				return true
			}
		}
		return false
	}
	var (
		candidates                  []candidate
		failedNodes                 []*v1alpha1.NodeHooks
		holds                       []string // "NODE (why)" of the nodes that hold the rollout
		updated, succeeded, unavail int
		settled                     = true // every matched node applied H, and it finished
		claimed                     = make(map[string]bool, len(matched))
		isMatched                   = make(map[string]bool, len(matched))
	)
	for _, n := range matched {
		isMatched[n.Name] = true
		// A node that is not Ready is unavailable, whatever it did:
		// it is approved for nothing, and takes a slot of
		// maxUnavailable, as the machine-config-operator counts it.
		notReady := n.NotReady != ""
		busy := busyElsewhere(n)
		if notReady || busy {
			unavail++
		}
		nh := own[n.Name]
		if nh == nil {
			settled = false
			if foreign[n.Name] || deleting {
				continue
			}
			c := newNodeHooks(hh, n.Name)
			d.Create = append(d.Create, c)
			if !notReady {
				candidates = append(candidates, candidate{name: c.Name, busy: busy})
			}
			continue
		}
		claimed[nh.Name] = true
		if nh.Status.AppliedHash == h && nh.Status.Phase != v1alpha1.NodeRemoved {
			// A node that removed the hooks (it left the selector and
			// came back) has them no more, whatever it applied last.
			updated++
			switch nh.Status.Phase {
			case v1alpha1.NodeSucceeded:
				succeeded++
			case v1alpha1.NodeFailed:
				failedNodes = append(failedNodes, nh)
			}
		}
		done := doneAt(nh, h)
		if !done {
			settled = false
		}
		// A node that left the selector and came back has its
		// removal approved still: it is approved again, which
		// clears it, before its agent could prune on a later
		// relabelling with no approval.
		approvedH := nh.Spec.HooksHash == h && !nh.Spec.Remove
		switch {
		case notReady:
		case !approvedH:
			candidates = append(candidates, candidate{nh.Name, nh, busy})
		case !done && !busy:
			unavail++
		}
		if done || deleting {
			continue
		}
		// A time the API server did not set is no deadline.
		switch {
		case notReady:
			if n.NotReadySince.IsZero() {
				break
			}
			if due := n.NotReadySince.Add(deadline); now.Before(due) {
				ahead(due)
			} else {
				holds = append(holds, fmt.Sprintf("%s (not Ready for %s: %s)", n.Name, round(now.Sub(n.NotReadySince)), n.NotReady))
			}
		case nh.Status.Phase == "" && !nh.CreationTimestamp.IsZero():
			if due := nh.CreationTimestamp.Add(deadline); now.Before(due) {
				ahead(due)
			} else {
				holds = append(holds, fmt.Sprintf("%s (no agent: none has reported on the node in %s)", n.Name, round(now.Sub(nh.CreationTimestamp.Time))))
			}
		case approvedH:
			at := nh.CreationTimestamp.Time
			if nh.Spec.ApprovedAt != nil {
				at = nh.Spec.ApprovedAt.Time
			}
			if at.IsZero() {
				break
			}
			if due := at.Add(deadline); now.Before(due) {
				ahead(due)
			} else {
				phase := string(nh.Status.Phase)
				if nh.Status.AppliedHash != h {
					phase += ", the current hooks not applied"
				}
				holds = append(holds, fmt.Sprintf("%s (approved %s ago and not done: %s)", n.Name, round(now.Sub(at)), phase))
			}
		}
	}
	// What is left of hh's own: NodeHooks of nodes it no longer matches
	// (or that are gone, or a second one of a node). While hh is being
	// deleted, its finalizer waits for all of them, and the garbage
	// collector deletes them after it. A node that left the selector
	// waits for the removal of its units to be approved.
	var (
		pending  []string
		removals []candidate
		leaving  = make(map[string]bool)
	)
	for i := range nhs {
		nh := &nhs[i]
		if !owned(hh, nh) {
			continue
		}
		node, nodeExists := byName[nh.Spec.NodeName]
		if deleting {
			if nodeExists && !removed(nh) && !slices.Contains(pending, nh.Spec.NodeName) {
				pending = append(pending, nh.Spec.NodeName)
			}
			continue
		}
		if claimed[nh.Name] || specErr != nil {
			continue
		}
		if !nodeExists || isMatched[nh.Spec.NodeName] {
			d.Delete = append(d.Delete, nh)
			continue
		}
		// A node that left hh with hh's hooks counts against hh's
		// budget while it is disrupted: removing hh's hooks, or busy
		// for another HostHooks (removing theirs too, mostly). Its
		// NodeHooks stays till then, so that the count does not drop
		// as hh's part is done and another's is not. One that never
		// applied hh's hooks is none of hh's business.
		busy := busyElsewhere(node)
		neverApplied := nh.Status.AppliedHash == "" && nh.Status.Phase != v1alpha1.NodeRemoved
		if neverApplied || removed(nh) && !busy {
			d.Delete = append(d.Delete, nh)
			continue
		}
		removing := nh.Spec.Remove && !removed(nh)
		if (removing || busy) && !leaving[nh.Spec.NodeName] {
			leaving[nh.Spec.NodeName] = true
			unavail++
		}
		if removed(nh) {
			continue
		}
		if !nh.Spec.Remove {
			// Not while the node is not Ready: its agent could not
			// act on it, as it could not apply.
			if node.NotReady == "" {
				removals = append(removals, candidate{nh.Name, nh, busy})
			}
			continue
		}
		at := nh.CreationTimestamp.Time
		if nh.Spec.ApprovedAt != nil {
			at = nh.Spec.ApprovedAt.Time
		}
		if at.IsZero() {
			continue
		}
		if due := at.Add(deadline); now.Before(due) {
			ahead(due)
		} else {
			holds = append(holds, fmt.Sprintf("%s (left the selector; the removal of the hooks approved %s ago and not done: %s)",
				nh.Spec.NodeName, round(now.Sub(at)), nh.Status.Phase))
		}
	}
	slices.SortFunc(removals, func(a, b candidate) int { return strings.Compare(a.nh.Spec.NodeName, b.nh.Spec.NodeName) })
	failed := len(failedNodes)
	stalled := len(holds) > 0

	paused := hh.Spec.Rollout.Pause
	degraded := failed > threshold
	// A candidate busy for another HostHooks takes no further slot: it
	// is approved whatever the count, and the node is disrupted once for
	// both.
	if specErr == nil && !deleting {
		for _, c := range removals {
			if !c.busy && unavail >= maxUnavailable {
				continue
			}
			d.Remove = append(d.Remove, c.name)
			if !c.busy && !removed(c.nh) {
				unavail++
			}
		}
	}
	if specErr == nil && !paused && !degraded && !deleting {
		for _, c := range candidates {
			if !c.busy && unavail >= maxUnavailable {
				continue
			}
			d.Approve = append(d.Approve, c.name)
			if !c.busy && (c.nh == nil || !doneAt(c.nh, h)) {
				unavail++
			}
		}
	}
	if degraded && !deleting {
		for _, nh := range failedNodes {
			holds = append(holds, nh.Spec.NodeName+" (failed the current hooks)")
		}
	}

	slices.Sort(pending)
	if deleting && len(pending) > 0 {
		due := hh.DeletionTimestamp.Add(seconds(hh.Spec.PruneTimeoutSeconds, DefaultPruneTimeout))
		if now.Before(due) {
			ahead(due)
		} else {
			d.Orphaned = pending
		}
	}
	d.RemoveFinalizer = deleting && (len(pending) == 0 || d.Orphaned != nil)

	st := v1alpha1.HostHooksStatus{
		ObservedGeneration: hh.Generation,
		HooksHash:          h,
		MatchedNodes:       int32(len(matched)),
		UpdatedNodes:       int32(updated),
		SucceededNodes:     int32(succeeded),
		FailedNodes:        int32(failed),
		Errors:             summarize(hh, failedNodes),
		Conditions:         slices.Clone(hh.Status.Conditions),
	}
	complete := specErr == nil && succeeded == len(matched)
	switch {
	case specErr != nil || degraded:
		st.Phase = v1alpha1.PhaseDegraded
	case complete:
		st.Phase = v1alpha1.PhaseComplete
	case settled:
		st.Phase = v1alpha1.PhaseFinishedWithFailures
	case stalled:
		st.Phase = v1alpha1.PhaseStalled
	case paused:
		st.Phase = v1alpha1.PhasePaused
	default:
		st.Phase = v1alpha1.PhaseProgressing
	}

	gen := hh.Generation
	set := func(typ string, ok bool, reason, format string, args ...any) {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: typ, Status: s, ObservedGeneration: gen,
			LastTransitionTime: metav1.NewTime(now), Reason: reason, Message: fmt.Sprintf(format, args...),
		})
	}
	progress := fmt.Sprintf("%d of %d matched nodes updated, %d succeeded, %d failed", updated, len(matched), succeeded, failed)
	switch {
	case deleting && d.Orphaned != nil:
		set(v1alpha1.ConditionProgressing, false, ReasonOrphaned, "the HostHooks is being deleted; after the prune timeout of %s, %d nodes still have its units, orphaned: their agents never removed them (they do when they run again): %s",
			seconds(hh.Spec.PruneTimeoutSeconds, DefaultPruneTimeout), len(pending), list(pending))
	case deleting:
		if len(pending) == 0 {
			set(v1alpha1.ConditionProgressing, false, ReasonDeleting, "the HostHooks is being deleted; no node has its hooks any more")
		} else {
			set(v1alpha1.ConditionProgressing, false, ReasonDeleting, "the HostHooks is being deleted; waiting for %d nodes to remove its hooks: %s", len(pending), list(pending))
		}
	case specErr != nil:
		set(v1alpha1.ConditionProgressing, false, ReasonInvalidSpec, "%v", specErr)
	case degraded:
		set(v1alpha1.ConditionProgressing, false, ReasonFailureThreshold, "the rollout stopped: %s", progress)
	case complete:
		set(v1alpha1.ConditionProgressing, false, ReasonComplete, "%s", progress)
	case settled:
		set(v1alpha1.ConditionProgressing, false, ReasonFinishedWithFailures, "every matched node applied the current hooks: %s, within the failure threshold of %d", progress, threshold)
	case stalled:
		set(v1alpha1.ConditionProgressing, false, ReasonProgressDeadline, "the rollout is stalled (the Stalled condition names the nodes): %s", progress)
	case paused:
		set(v1alpha1.ConditionProgressing, false, ReasonPaused, "the rollout is paused: %s", progress)
	default:
		set(v1alpha1.ConditionProgressing, true, ReasonRollingOut, "%s", progress)
	}
	if complete {
		set(v1alpha1.ConditionComplete, true, ReasonComplete, "the current hooks succeeded on all %d matched nodes", len(matched))
	} else {
		set(v1alpha1.ConditionComplete, false, ReasonNodesPending, "%s", progress)
	}
	switch {
	case specErr != nil:
		set(v1alpha1.ConditionDegraded, true, ReasonInvalidSpec, "%v", specErr)
	case degraded:
		set(v1alpha1.ConditionDegraded, true, ReasonFailureThreshold, "%d nodes failed the current hooks, more than the failure threshold of %d", failed, threshold)
	default:
		set(v1alpha1.ConditionDegraded, false, ReasonWithinThreshold, "%d nodes failed the current hooks; the failure threshold is %d", failed, threshold)
	}
	if paused {
		set(v1alpha1.ConditionPaused, true, ReasonPaused, "spec.rollout.pause is set: no further node is approved")
	} else {
		set(v1alpha1.ConditionPaused, false, ReasonNotPaused, "the rollout is not paused")
	}
	switch {
	case stalled:
		set(v1alpha1.ConditionStalled, true, ReasonProgressDeadline, "%d nodes hold the rollout (its progress deadline is %s): %s", len(holds), deadline, list(holds))
	case degraded && len(holds) > 0:
		set(v1alpha1.ConditionStalled, true, ReasonFailureThreshold, "%d nodes hold the rollout: %s", len(holds), list(holds))
	default:
		set(v1alpha1.ConditionStalled, false, ReasonNotStalled, "no node holds the rollout past its progress deadline of %s", deadline)
	}

	d.Status = st
	d.StatusChanged = !equality.Semantic.DeepEqual(hh.Status, st)
	d.Events = transitions(hh.Status.Conditions, st.Conditions)
	if !next.IsZero() {
		d.RequeueAfter = next.Sub(now)
	}
	return d
}

// owned says whether nh is hh's: controlled by hh, or by nothing.
func owned(hh *v1alpha1.HostHooks, nh *v1alpha1.NodeHooks) bool {
	ref := metav1.GetControllerOf(nh)
	return ref == nil || ref.UID == hh.UID
}

// preferred says whether a is to be a node's NodeHooks rather than b,
// when hh has two for one node: the one of today's name, else the first
// by name, so that every reconcile picks the same.
func preferred(hh *v1alpha1.HostHooks, a, b *v1alpha1.NodeHooks) bool {
	want := v1alpha1.NodeHooksName(hh.Name, a.Spec.NodeName)
	if (a.Name == want) != (b.Name == want) {
		return a.Name == want
	}
	return a.Name < b.Name
}

// transitions are the Events of the conditions that changed from old to
// now: in status or reason. A condition that is new is an Event only when
// True or a warning: a new HostHooks is not Stalled, Degraded or Paused,
// and that is no news.
func transitions(old, now []metav1.Condition) []Event {
	var out []Event
	for _, c := range now {
		o := meta.FindStatusCondition(old, c.Type)
		if o != nil && o.Status == c.Status && o.Reason == c.Reason {
			continue
		}
		typ := corev1.EventTypeNormal
		switch c.Type {
		case v1alpha1.ConditionDegraded, v1alpha1.ConditionStalled:
			if c.Status == metav1.ConditionTrue {
				typ = corev1.EventTypeWarning
			}
		case v1alpha1.ConditionProgressing:
			switch c.Reason {
			case ReasonFailureThreshold, ReasonProgressDeadline, ReasonOrphaned, ReasonInvalidSpec:
				typ = corev1.EventTypeWarning
			}
		}
		if o == nil && c.Status != metav1.ConditionTrue && typ == corev1.EventTypeNormal {
			continue
		}
		out = append(out, Event{Type: typ, Reason: c.Reason, Message: fmt.Sprintf("%s is %s: %s", c.Type, c.Status, c.Message)})
	}
	return out
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

// BusyNodes is, by node name, the names of the HostHooks each node is
// unavailable for, sorted, from every HostHooks and every NodeHooks there are:
// the budget of Decide is shared by every HostHooks that selects a node.
// A node is busy for a HostHooks when its NodeHooks is approved for the
// HostHooks' current hooks, the HostHooks selects the node, and it is not
// done with them; when the HostHooks no longer selects it, its removal is
// approved (spec.remove), and the agent did not remove the units yet; and
// when the HostHooks is being deleted or gone (or the NodeHooks is an
// earlier one's of its name) and the agent did not remove them yet, since
// agents prune those at once. A node that is not Ready is no HostHooks'
// business here: Decide counts it of itself.
func BusyNodes(hhs []v1alpha1.HostHooks, nodes []Node, nhs []v1alpha1.NodeHooks) map[string][]string {
	type hostHooks struct {
		hh   *v1alpha1.HostHooks
		hash string
		sel  labels.Selector // nil when it cannot be read: it selects nothing
	}
	byName := make(map[string]hostHooks, len(hhs))
	for i := range hhs {
		hh := &hhs[i]
		sel, err := selector(hh.Spec.NodeSelector)
		if err != nil {
			sel = nil
		}
		byName[hh.Name] = hostHooks{hh, v1alpha1.HooksHash(hh.Spec.Hooks), sel}
	}
	nodeLabels := make(map[string]labels.Set, len(nodes))
	for _, n := range nodes {
		nodeLabels[n.Name] = labels.Set(n.Labels)
	}
	busy := make(map[string][]string)
	for i := range nhs {
		nh := &nhs[i]
		ls, ok := nodeLabels[nh.Spec.NodeName]
		if !ok || slices.Contains(busy[nh.Spec.NodeName], nh.Spec.HostHooks) {
			continue
		}
		b, ok := byName[nh.Spec.HostHooks]
		var is bool
		switch {
		case !ok || !owned(b.hh, nh) || b.hh.DeletionTimestamp != nil:
			is = !removed(nh)
		case b.sel == nil:
			// The agents neither apply nor prune what an unreadable
			// selector names.
		case !b.sel.Matches(ls):
			is = nh.Spec.Remove && !removed(nh)
		default:
			is = nh.Spec.HooksHash == b.hash && !nh.Spec.Remove && !doneAt(nh, b.hash)
		}
		if !is {
			continue
		}
		busy[nh.Spec.NodeName] = append(busy[nh.Spec.NodeName], nh.Spec.HostHooks)
	}
	for _, names := range busy {
		slices.Sort(names)
	}
	return busy
}
