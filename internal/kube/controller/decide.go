// Package controller is hostprov's controller on Kubernetes. For each
// HostHooks it keeps a NodeHooks for every node the selector matches,
// approves nodes for the current hooks as the rollout allows, sums the
// NodeHooks up into the HostHooks status, and holds the HostHooks'
// deletion until the agents pruned its units from the nodes.
//
// Every decision is made by one pure function, Decide, over the HostHooks,
// the nodes and the HostHooks' NodeHooks as the cache has them; the
// Reconciler only reads the cache and carries the decision out. That keeps
// a reconcile O(nodes) with no request but the writes it decides on, and
// lets the rules be tested without a server.
package controller

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// Node is what the controller needs of a Node: its name and labels, which
// decide whether a HostHooks selects it.
type Node struct {
	Name   string
	Labels map[string]string
}

// Decision is what a reconcile of one HostHooks does, in this order:
// add the finalizer, create the NodeHooks, approve nodes, delete the
// NodeHooks, write the status, remove the finalizer.
type Decision struct {
	// AddFinalizer is set when the HostHooks lacks v1alpha1.Finalizer and
	// is not being deleted.
	AddFinalizer bool
	// Create are the NodeHooks of matched nodes that have none yet, with
	// no hooks approved.
	Create []*v1alpha1.NodeHooks
	// Approve names the NodeHooks (existing ones, or ones in Create) whose
	// spec.hooksHash is to be set to Status.HooksHash, in node-name order.
	Approve []string
	// Delete are NodeHooks of nodes that are gone, or that the HostHooks
	// no longer selects and whose agent removed the hooks.
	Delete []*v1alpha1.NodeHooks
	// Status is the HostHooks' status; StatusChanged says whether it
	// differs from the one the HostHooks has.
	Status        v1alpha1.HostHooksStatus
	StatusChanged bool
	// RemoveFinalizer is set when the HostHooks is being deleted and no
	// node that exists has its hooks any more.
	RemoveFinalizer bool
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
)

// Decide decides what to do for hh, given every node and the NodeHooks of
// hh (those whose spec.hostHooks names it), at time now (the time of a
// condition that changes).
//
// The rules, with H the hash of the current hooks: every node the
// selector matches gets a NodeHooks. A matched node is unavailable when it
// is approved for H (spec.hooksHash == H) and has not applied H
// successfully; it failed when it applied H and its phase is Failed.
// Unless the rollout is paused, more nodes failed than the failure
// threshold allows, or hh is being deleted, nodes not approved for H are
// approved in node-name order while fewer than maxUnavailable are
// unavailable. A NodeHooks whose node is gone is deleted, and so is one
// whose node the selector no longer matches once the agent removed the
// hooks (phase Removed) or if it never applied any (no appliedHash). A
// HostHooks being deleted keeps its finalizer until every NodeHooks whose
// node exists is in that state.
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

	exists := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		exists[n.Name] = true
	}
	own := make(map[string]*v1alpha1.NodeHooks, len(nhs))
	foreign := make(map[string]bool)
	for i := range nhs {
		nh := &nhs[i]
		if ref := metav1.GetControllerOf(nh); ref != nil && ref.UID != hh.UID {
			foreign[nh.Name] = true
			continue
		}
		own[nh.Name] = nh
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
	}
	var (
		candidates                  []candidate
		failedNodes                 []*v1alpha1.NodeHooks
		updated, succeeded, unavail int
		settled                     = true // every matched node applied H, and it finished
		claimed                     = make(map[string]bool, len(matched))
	)
	for _, n := range matched {
		name := v1alpha1.NodeHooksName(hh.Name, n.Name)
		nh := own[name]
		if nh == nil {
			settled = false
			if foreign[name] || deleting {
				continue
			}
			d.Create = append(d.Create, newNodeHooks(hh, n.Name))
			candidates = append(candidates, candidate{name: name})
			continue
		}
		claimed[name] = true
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
		if nh.Status.AppliedHash != h || (nh.Status.Phase != v1alpha1.NodeSucceeded && nh.Status.Phase != v1alpha1.NodeFailed) {
			settled = false
		}
		if nh.Spec.HooksHash != h {
			candidates = append(candidates, candidate{name, nh})
		} else if !succeededAt(nh, h) {
			unavail++
		}
	}
	failed := len(failedNodes)

	paused := hh.Spec.Rollout.Pause
	degraded := failed > threshold
	if specErr == nil && !paused && !degraded && !deleting {
		for _, c := range candidates {
			if unavail >= maxUnavailable {
				break
			}
			d.Approve = append(d.Approve, c.name)
			if c.nh == nil || !succeededAt(c.nh, h) {
				unavail++
			}
		}
	}

	// What is left of hh's own: NodeHooks of nodes it no longer matches
	// (or that are gone). While hh is being deleted, its finalizer waits
	// for all of them, and the garbage collector deletes them after it.
	pending := 0
	for i := range nhs {
		nh := &nhs[i]
		if own[nh.Name] != nh {
			continue
		}
		nodeExists := exists[nh.Spec.NodeName]
		if deleting {
			if nodeExists && !removed(nh) {
				pending++
			}
			continue
		}
		if claimed[nh.Name] || specErr != nil {
			continue
		}
		if !nodeExists || removed(nh) {
			d.Delete = append(d.Delete, nh)
		}
	}
	d.RemoveFinalizer = deleting && pending == 0

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
	case deleting:
		if pending == 0 {
			set(v1alpha1.ConditionProgressing, false, ReasonDeleting, "the HostHooks is being deleted; no node has its hooks any more")
		} else {
			set(v1alpha1.ConditionProgressing, false, ReasonDeleting, "the HostHooks is being deleted; waiting for %d nodes to remove its hooks", pending)
		}
	case specErr != nil:
		set(v1alpha1.ConditionProgressing, false, ReasonInvalidSpec, "%v", specErr)
	case degraded:
		set(v1alpha1.ConditionProgressing, false, ReasonFailureThreshold, "the rollout stopped: %s", progress)
	case complete:
		set(v1alpha1.ConditionProgressing, false, ReasonComplete, "%s", progress)
	case settled:
		set(v1alpha1.ConditionProgressing, false, ReasonFinishedWithFailures, "every matched node applied the current hooks: %s, within the failure threshold of %d", progress, threshold)
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

	d.Status = st
	d.StatusChanged = !equality.Semantic.DeepEqual(hh.Status, st)
	return d
}

// succeededAt says whether nh applied the hooks of hash h and they
// succeeded.
func succeededAt(nh *v1alpha1.NodeHooks, h string) bool {
	return nh.Status.AppliedHash == h && nh.Status.Phase == v1alpha1.NodeSucceeded
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
