package controller

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

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

// status is hh's status and its conditions after the decision, and the
// Events of the conditions that changed.
func (k *decider) status() {
	hh, matched, failed := k.hh, len(k.matched), len(k.failedNodes)
	paused, degraded, stalled := hh.Spec.Rollout.Pause, k.degraded(), k.late > 0
	st := v1alpha1.HostHooksStatus{
		ObservedGeneration: hh.Generation,
		HooksHash:          k.h,
		MatchedNodes:       int32(matched),
		UpdatedNodes:       int32(k.updated),
		SucceededNodes:     int32(k.succeeded),
		FailedNodes:        int32(failed),
		Errors:             summarize(hh, k.failedNodes),
		Conditions:         slices.Clone(hh.Status.Conditions),
	}
	complete := k.specErr == nil && k.succeeded == matched
	switch {
	case k.specErr != nil || degraded:
		st.Phase = v1alpha1.PhaseDegraded
	case complete:
		st.Phase = v1alpha1.PhaseComplete
	case k.settled:
		st.Phase = v1alpha1.PhaseFinishedWithFailures
	case stalled:
		st.Phase = v1alpha1.PhaseStalled
	case paused:
		st.Phase = v1alpha1.PhasePaused
	default:
		st.Phase = v1alpha1.PhaseProgressing
	}

	set := func(typ string, ok bool, reason, format string, args ...any) {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: typ, Status: s, ObservedGeneration: hh.Generation,
			LastTransitionTime: metav1.NewTime(k.now), Reason: reason, Message: fmt.Sprintf(format, args...),
		})
	}
	progress := fmt.Sprintf("%d of %d matched nodes updated, %d succeeded, %d failed", k.updated, matched, k.succeeded, failed)
	switch {
	case k.deleting && k.d.Orphaned != nil:
		set(v1alpha1.ConditionProgressing, false, ReasonOrphaned, "the HostHooks is being deleted; after the prune timeout of %s, %d nodes still have its units, orphaned: their agents never removed them (they do when they run again): %s",
			seconds(hh.Spec.PruneTimeoutSeconds, DefaultPruneTimeout), len(k.pending), list(k.pending))
	case k.deleting && len(k.pending) == 0:
		set(v1alpha1.ConditionProgressing, false, ReasonDeleting, "the HostHooks is being deleted; no node has its hooks any more")
	case k.deleting:
		set(v1alpha1.ConditionProgressing, false, ReasonDeleting, "the HostHooks is being deleted; waiting for %d nodes to remove its hooks: %s", len(k.pending), list(k.pending))
	case k.specErr != nil:
		set(v1alpha1.ConditionProgressing, false, ReasonInvalidSpec, "%v", k.specErr)
	case degraded:
		set(v1alpha1.ConditionProgressing, false, ReasonFailureThreshold, "the rollout stopped: %s", progress)
	case complete:
		set(v1alpha1.ConditionProgressing, false, ReasonComplete, "%s", progress)
	case k.settled:
		set(v1alpha1.ConditionProgressing, false, ReasonFinishedWithFailures, "every matched node applied the current hooks: %s, within the failure threshold of %d", progress, k.threshold)
	case stalled:
		set(v1alpha1.ConditionProgressing, false, ReasonProgressDeadline, "the rollout is stalled (the Stalled condition names the nodes): %s", progress)
	case paused:
		set(v1alpha1.ConditionProgressing, false, ReasonPaused, "the rollout is paused: %s", progress)
	default:
		set(v1alpha1.ConditionProgressing, true, ReasonRollingOut, "%s", progress)
	}
	if complete {
		set(v1alpha1.ConditionComplete, true, ReasonComplete, "the current hooks succeeded on all %d matched nodes", matched)
	} else {
		set(v1alpha1.ConditionComplete, false, ReasonNodesPending, "%s", progress)
	}
	switch {
	case k.specErr != nil:
		set(v1alpha1.ConditionDegraded, true, ReasonInvalidSpec, "%v", k.specErr)
	case degraded:
		set(v1alpha1.ConditionDegraded, true, ReasonFailureThreshold, "%d nodes failed the current hooks, more than the failure threshold of %d", failed, k.threshold)
	default:
		set(v1alpha1.ConditionDegraded, false, ReasonWithinThreshold, "%d nodes failed the current hooks; the failure threshold is %d", failed, k.threshold)
	}
	if paused {
		set(v1alpha1.ConditionPaused, true, ReasonPaused, "spec.rollout.pause is set: no further node is approved")
	} else {
		set(v1alpha1.ConditionPaused, false, ReasonNotPaused, "the rollout is not paused")
	}
	switch {
	case stalled:
		set(v1alpha1.ConditionStalled, true, ReasonProgressDeadline, "%d nodes hold the rollout (its progress deadline is %s): %s", len(k.holds), k.deadline, list(k.holds))
	case degraded && len(k.holds) > 0:
		set(v1alpha1.ConditionStalled, true, ReasonFailureThreshold, "%d nodes hold the rollout: %s", len(k.holds), list(k.holds))
	default:
		set(v1alpha1.ConditionStalled, false, ReasonNotStalled, "no node holds the rollout past its progress deadline of %s", k.deadline)
	}
	k.d.Status = st
	k.d.StatusChanged = !equality.Semantic.DeepEqual(hh.Status, st)
	k.d.Events = transitions(hh.Status.Conditions, st.Conditions)
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
