package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// conds is the conditions of st as type: status/reason.
func conds(st v1alpha1.HostHooksStatus) map[string]string {
	m := map[string]string{}
	for _, c := range st.Conditions {
		m[c.Type] = string(c.Status) + "/" + c.Reason
	}
	return m
}

func TestDecideConditions(t *testing.T) {
	tests := []struct {
		name  string
		hh    *v1alpha1.HostHooks
		nhs   []v1alpha1.NodeHooks
		want  map[string]string
		phase v1alpha1.Phase
	}{{
		name: "rolling out",
		hh:   hostHooks(),
		nhs:  []v1alpha1.NodeHooks{nodeHooks("n01", hashA, hashA, v1alpha1.NodeSucceeded)},
		want: map[string]string{
			"Progressing": "True/RollingOut", "Complete": "False/NodesPending",
			"Degraded": "False/WithinFailureThreshold", "Paused": "False/NotPaused", "Stalled": "False/NotStalled",
		},
		phase: v1alpha1.PhaseProgressing,
	}, {
		name: "complete",
		hh:   hostHooks(),
		nhs:  []v1alpha1.NodeHooks{nodeHooks("n01", hashA, hashA, v1alpha1.NodeSucceeded), nodeHooks("n02", hashA, hashA, v1alpha1.NodeSucceeded)},
		want: map[string]string{
			"Progressing": "False/Complete", "Complete": "True/Complete",
			"Degraded": "False/WithinFailureThreshold", "Paused": "False/NotPaused", "Stalled": "False/NotStalled",
		},
		phase: v1alpha1.PhaseComplete,
	}, {
		name: "degraded",
		hh:   hostHooks(),
		nhs:  []v1alpha1.NodeHooks{nodeHooks("n01", hashA, hashA, v1alpha1.NodeFailed)},
		want: map[string]string{
			"Progressing": "False/FailureThresholdExceeded", "Complete": "False/NodesPending",
			"Degraded": "True/FailureThresholdExceeded", "Paused": "False/NotPaused", "Stalled": "True/FailureThresholdExceeded",
		},
		phase: v1alpha1.PhaseDegraded,
	}, {
		name: "degraded and paused is degraded",
		hh:   hostHooks(paused),
		nhs:  []v1alpha1.NodeHooks{nodeHooks("n01", hashA, hashA, v1alpha1.NodeFailed)},
		want: map[string]string{
			"Progressing": "False/FailureThresholdExceeded", "Complete": "False/NodesPending",
			"Degraded": "True/FailureThresholdExceeded", "Paused": "True/Paused", "Stalled": "True/FailureThresholdExceeded",
		},
		phase: v1alpha1.PhaseDegraded,
	}, {
		name: "paused",
		hh:   hostHooks(paused),
		want: map[string]string{
			"Progressing": "False/Paused", "Complete": "False/NodesPending",
			"Degraded": "False/WithinFailureThreshold", "Paused": "True/Paused", "Stalled": "False/NotStalled",
		},
		phase: v1alpha1.PhasePaused,
	}, {
		name: "deleting",
		hh:   hostHooks(deleting),
		nhs:  []v1alpha1.NodeHooks{nodeHooks("n01", hashA, hashA, v1alpha1.NodeSucceeded)},
		want: map[string]string{
			"Progressing": "False/Deleting", "Complete": "False/NodesPending",
			"Degraded": "False/WithinFailureThreshold", "Paused": "False/NotPaused", "Stalled": "False/NotStalled",
		},
		phase: v1alpha1.PhaseProgressing,
	}, {
		name: "invalid",
		hh:   hostHooks(withMaxUnavailable(intstr.FromString("x%"))),
		want: map[string]string{
			"Progressing": "False/InvalidSpec", "Complete": "False/NodesPending",
			"Degraded": "True/InvalidSpec", "Paused": "False/NotPaused", "Stalled": "False/NotStalled",
		},
		phase: v1alpha1.PhaseDegraded,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.hh, nodes(2, nil), tt.nhs, t0)
			if diff := cmp.Diff(tt.want, conds(d.Status)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if d.Status.Phase != tt.phase {
				t.Errorf("phase = %s, want %s", d.Status.Phase, tt.phase)
			}
			for _, c := range d.Status.Conditions {
				if c.ObservedGeneration != tt.hh.Generation || !c.LastTransitionTime.Time.Equal(t0) || c.Message == "" {
					t.Errorf("condition %s: observedGeneration %d, time %v, message %q; want %d, %v and a message",
						c.Type, c.ObservedGeneration, c.LastTransitionTime, c.Message, tt.hh.Generation, t0)
				}
			}
		})
	}
}

// TestDecideStatusUnchanged: a status that is what Decide decided is not
// written again, and a condition keeps the time it last changed at.
func TestDecideStatusUnchanged(t *testing.T) {
	ns := nodes(2, nil)
	nhs := []v1alpha1.NodeHooks{nodeHooks("n01", hashA, hashA, v1alpha1.NodeSucceeded), nodeHooks("n02", "", "", v1alpha1.NodePending)}
	hh := hostHooks()
	d := Decide(hh, ns, nhs, t0)
	if !d.StatusChanged {
		t.Fatal("the first status is not a change")
	}
	hh.Status = d.Status
	t1 := t0.Add(time.Hour)
	if d := Decide(hh, ns, nhs, t1); d.StatusChanged {
		t.Errorf("the same status again is a change:\n%s", cmp.Diff(hh.Status, d.Status))
	}

	// n02 is approved and succeeds: counts and Complete change; Degraded
	// and Paused keep their times.
	nhs[1] = nodeHooks("n02", hashA, hashA, v1alpha1.NodeSucceeded)
	d = Decide(hh, ns, nhs, t1)
	if !d.StatusChanged {
		t.Fatal("a node's success is no change")
	}
	at := map[string]time.Time{}
	for _, c := range d.Status.Conditions {
		at[c.Type] = c.LastTransitionTime.Time
	}
	want := map[string]time.Time{"Progressing": t1, "Complete": t1, "Degraded": t0, "Paused": t0, "Stalled": t0}
	if diff := cmp.Diff(want, at); diff != "" {
		t.Errorf("transition times (-want +got):\n%s", diff)
	}

	// A new generation is a change of the status, if of nothing else.
	hh.Status = d.Status
	hh.Generation++
	d = Decide(hh, ns, nhs, t1)
	if !d.StatusChanged || d.Status.ObservedGeneration != hh.Generation {
		t.Errorf("generation %d: changed %v, observedGeneration %d", hh.Generation, d.StatusChanged, d.Status.ObservedGeneration)
	}

	// Conditions of others are kept.
	hh.Status = d.Status
	hh.Status.Conditions = append(hh.Status.Conditions, metav1.Condition{Type: "Other", Status: metav1.ConditionTrue, Reason: "Mine"})
	d = Decide(hh, ns, nhs, t1)
	if d.StatusChanged || conds(d.Status)["Other"] != "True/Mine" {
		t.Errorf("another's condition: changed %v, conditions %v", d.StatusChanged, conds(d.Status))
	}
}

// TestDecideEvents: each transition of a condition is an Event, once.
func TestDecideEvents(t *testing.T) {
	ns := nodes(2, nil)
	hh := hostHooks()
	nhs := []v1alpha1.NodeHooks{nodeHooks("n01", "", "", v1alpha1.NodePending), nodeHooks("n02", "", "", v1alpha1.NodePending)}
	d := Decide(hh, ns, nhs, t0)
	if diff := cmp.Diff([]Event{{"Normal", "RollingOut", "Progressing is True: 0 of 2 matched nodes updated, 0 succeeded, 0 failed"}}, d.Events); diff != "" {
		t.Errorf("events of a new HostHooks (-want +got):\n%s", diff)
	}
	hh.Status = d.Status
	if d := Decide(hh, ns, nhs, t0); d.Events != nil {
		t.Errorf("events with no transition: %+v", d.Events)
	}
	nhs[0] = nodeHooks("n01", hashA, hashA, v1alpha1.NodeFailed)
	d = Decide(hh, ns, nhs, t0)
	var got []string
	for _, e := range d.Events {
		got = append(got, e.Type+" "+e.Reason)
	}
	want := []string{"Warning FailureThresholdExceeded", "Warning FailureThresholdExceeded", "Warning FailureThresholdExceeded"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events of a failure (-want +got):\n%s", diff)
	}
}

// TestDecideStall: a rollout stalls neither on a failure within the
// failure threshold, nor on a node with no agent without naming it, and
// its phase agrees with its conditions once every node applied.
func TestDecideStall(t *testing.T) {
	t.Run("a failure within the threshold takes no slot of maxUnavailable", func(t *testing.T) {
		hh := hostHooks(withMaxUnavailable(intstr.FromInt32(1)), withThreshold(5))
		nhs := []v1alpha1.NodeHooks{
			nodeHooks("n01", hashA, hashA, v1alpha1.NodeSucceeded),
			nodeHooks("n02", hashA, hashA, v1alpha1.NodeFailed),
			nodeHooks("n03", "", "", v1alpha1.NodePending),
		}
		d := Decide(hh, nodes(3, nil), nhs, t0)
		if diff := cmp.Diff(nhNames("n03"), d.Approve); diff != "" {
			t.Errorf("approved (-want +got):\n%s", diff)
		}
		if got := conds(d.Status)["Progressing"]; got != "True/RollingOut" {
			t.Errorf("Progressing %s, want True/RollingOut", got)
		}
	})
	t.Run("every node applied, failures within the threshold: the phase says what the condition says", func(t *testing.T) {
		hh := hostHooks(withThreshold(5))
		nhs := []v1alpha1.NodeHooks{
			nodeHooks("n01", hashA, hashA, v1alpha1.NodeSucceeded),
			nodeHooks("n02", hashA, hashA, v1alpha1.NodeFailed),
			nodeHooks("n03", hashA, hashA, v1alpha1.NodeSucceeded),
		}
		d := Decide(hh, nodes(3, nil), nhs, t0)
		if got := countsOf(d.Status); got != (counts{3, 3, 2, 1, v1alpha1.Phase("FinishedWithFailures")}) {
			t.Errorf("status %+v, want phase FinishedWithFailures", got)
		}
		if got := conds(d.Status)["Progressing"]; got != "False/FinishedWithFailures" {
			t.Errorf("Progressing %s", got)
		}
	})
	t.Run("a node with no agent, first by name, is named once the deadline passed", func(t *testing.T) {
		nhs := []v1alpha1.NodeHooks{
			nodeHooks("n01", hashA, "", ""),
			nodeHooks("n02", "", "", v1alpha1.NodePending),
			nodeHooks("n03", "", "", v1alpha1.NodePending),
		}
		for i := range nhs {
			nhs[i].CreationTimestamp = ago(11 * time.Minute)
		}
		d := Decide(hostHooks(), nodes(3, nil), nhs, t0)
		var stalled *metav1.Condition
		for i, c := range d.Status.Conditions {
			if c.Type == "Stalled" {
				stalled = &d.Status.Conditions[i]
			}
		}
		if stalled == nil || stalled.Status != metav1.ConditionTrue || !strings.Contains(stalled.Message, "n01 (no agent") ||
			strings.Contains(stalled.Message, "n02") {
			t.Errorf("Stalled %+v, want True, naming n01 (no agent) only", stalled)
		}
		if got := conds(d.Status)["Progressing"]; got != "False/ProgressDeadlineExceeded" {
			t.Errorf("Progressing %s", got)
		}
		if d.Status.Phase != v1alpha1.Phase("Stalled") {
			t.Errorf("phase %s, want Stalled", d.Status.Phase)
		}
	})
}

// stalledOf is the Stalled condition of d's status, or the zero one.
func stalledOf(d Decision) metav1.Condition {
	for _, c := range d.Status.Conditions {
		if c.Type == v1alpha1.ConditionStalled {
			return c
		}
	}
	return metav1.Condition{}
}

// approvedAgo is nh approved at at.
func approvedAgo(nh v1alpha1.NodeHooks, at metav1.Time) v1alpha1.NodeHooks {
	nh.Spec.ApprovedAt = &at
	return nh
}

// deadlineCases are NodeHooks of two nodes, and the Stalled condition,
// the requeue and the phase Decide decides for them.
var deadlineCases = []struct {
	name    string
	hh      *v1alpha1.HostHooks
	nhs     []v1alpha1.NodeHooks
	stalled string // the Stalled condition's status/reason
	names   []string
	requeue time.Duration
	phase   v1alpha1.Phase
}{{
	name: "an approved node whose agent has not applied within the deadline",
	nhs: []v1alpha1.NodeHooks{
		approvedAgo(nodeHooks("n01", hashA, "", v1alpha1.NodePending), ago(11*time.Minute)),
		nodeHooks("n02", "", "", v1alpha1.NodePending),
	},
	stalled: "True/ProgressDeadlineExceeded",
	names:   []string{"n01 (approved 11m0s ago and not done: Pending, the current hooks not applied)"},
	phase:   v1alpha1.PhaseStalled,
}, {
	name: "a node whose hooks still start past the deadline",
	nhs: []v1alpha1.NodeHooks{
		approvedAgo(nodeHooks("n01", hashA, hashA, v1alpha1.NodeApplying), ago(20*time.Minute)),
		nodeHooks("n02", "", "", v1alpha1.NodePending),
	},
	stalled: "True/ProgressDeadlineExceeded",
	names:   []string{"n01 (approved 20m0s ago and not done: Applying)"},
	phase:   v1alpha1.PhaseStalled,
}, {
	name: "within the deadline: not stalled, and back when it passes",
	nhs: []v1alpha1.NodeHooks{
		approvedAgo(nodeHooks("n01", hashA, "", v1alpha1.NodePending), ago(time.Minute)),
		nodeHooks("n02", "", "", v1alpha1.NodePending),
	},
	stalled: "False/NotStalled",
	requeue: 9 * time.Minute,
	phase:   v1alpha1.PhaseProgressing,
}, {
	name: "progressDeadlineSeconds sets the deadline",
	hh: hostHooks(func(hh *v1alpha1.HostHooks) {
		hh.Spec.Rollout.ProgressDeadlineSeconds = new(int32(30))
	}),
	nhs: []v1alpha1.NodeHooks{
		approvedAgo(nodeHooks("n01", hashA, "", v1alpha1.NodePending), ago(time.Minute)),
		nodeHooks("n02", "", "", v1alpha1.NodePending),
	},
	stalled: "True/ProgressDeadlineExceeded",
	names:   []string{"n01 (approved 1m0s ago"},
	phase:   v1alpha1.PhaseStalled,
}, {
	name: "no agent yet, within the deadline of the NodeHooks' creation",
	nhs: func() []v1alpha1.NodeHooks {
		nh := nodeHooks("n01", hashA, "", "")
		nh.CreationTimestamp = ago(2 * time.Minute)
		return []v1alpha1.NodeHooks{nh, nodeHooks("n02", "", "", v1alpha1.NodePending)}
	}(),
	stalled: "False/NotStalled",
	requeue: 8 * time.Minute,
	phase:   v1alpha1.PhaseProgressing,
}, {
	name: "no agent on a node the rollout has not reached holds it too, since it cannot complete",
	nhs: func() []v1alpha1.NodeHooks {
		nh := nodeHooks("n02", "", "", "")
		nh.CreationTimestamp = ago(time.Hour)
		return []v1alpha1.NodeHooks{approvedAgo(nodeHooks("n01", hashA, "", v1alpha1.NodePending), ago(time.Minute)), nh}
	}(),
	stalled: "True/ProgressDeadlineExceeded",
	names:   []string{"n02 (no agent: none has reported on the node in 1h0m0s)"},
	requeue: 9 * time.Minute,
	phase:   v1alpha1.PhaseStalled,
}, {
	name: "past the failure threshold, the failed nodes hold it",
	nhs: []v1alpha1.NodeHooks{
		nodeHooks("n01", hashA, hashA, v1alpha1.NodeFailed),
		nodeHooks("n02", "", "", v1alpha1.NodePending),
	},
	stalled: "True/FailureThresholdExceeded",
	names:   []string{"n01 (failed the current hooks)"},
	phase:   v1alpha1.PhaseDegraded,
}, {
	name: "a failed node within the threshold holds nothing",
	hh:   hostHooks(withThreshold(1)),
	nhs: []v1alpha1.NodeHooks{
		nodeHooks("n01", hashA, hashA, v1alpha1.NodeFailed),
		approvedAgo(nodeHooks("n02", hashA, "", v1alpha1.NodePending), ago(0)),
	},
	stalled: "False/NotStalled",
	requeue: 10 * time.Minute,
	phase:   v1alpha1.PhaseProgressing,
}}

// TestDecideDeadlines: a node past its progress deadline holds the
// rollout, and the Stalled condition says which and why; a deadline ahead
// brings the reconcile back when it passes.
func TestDecideDeadlines(t *testing.T) {
	for _, tt := range deadlineCases {
		t.Run(tt.name, func(t *testing.T) {
			hh := tt.hh
			if hh == nil {
				hh = hostHooks()
			}
			d := Decide(hh, nodes(2, nil), tt.nhs, t0)
			c := stalledOf(d)
			if got := string(c.Status) + "/" + c.Reason; got != tt.stalled {
				t.Errorf("Stalled %s, want %s", got, tt.stalled)
			}
			for _, n := range tt.names {
				if !strings.Contains(c.Message, n) {
					t.Errorf("Stalled says %q, not %q", c.Message, n)
				}
			}
			if d.RequeueAfter != tt.requeue {
				t.Errorf("RequeueAfter %v, want %v", d.RequeueAfter, tt.requeue)
			}
			if d.Status.Phase != tt.phase {
				t.Errorf("phase %s, want %s", d.Status.Phase, tt.phase)
			}
		})
	}
}
