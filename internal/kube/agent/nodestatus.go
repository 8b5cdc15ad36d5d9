package agent

import (
	"slices"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/apply"
)

// status is the NodeHooks status of nh after a sync with the outcomes and
// the reports of r, at now. AppliedAt moves only when something happened
// to the set: its units changed, it applied other hooks, or it was
// removed; a sync that changes nothing writes nothing.
func status(nh *v1alpha1.NodeHooks, hh *v1alpha1.HostHooks, o *outcome, reports []apply.UnitReport, now time.Time) v1alpha1.NodeHooksStatus {
	old := nh.Status
	set := v1alpha1.SetName(nh.Spec.HostHooks)
	var units []apply.UnitReport
	for _, r := range reports {
		if r.Set == set {
			units = append(units, r)
		}
	}
	if o == nil {
		o = &outcome{action: prune}
	}
	st := v1alpha1.NodeHooksStatus{AppliedHash: old.AppliedHash, Message: o.message, Retry: old.Retry}
	switch o.action {
	case prune:
		if len(units) == 0 {
			st = v1alpha1.NodeHooksStatus{Phase: v1alpha1.NodeRemoved}
			break
		}
		st.Phase = v1alpha1.NodeFailed
		if st.Message == "" {
			st.Message = "the node still has units of these hooks, which it is to remove"
		}
	case applySet, invalid, failedKept:
		st.AppliedHash = o.hash
		// The retry the node carried out: recorded with the
		// apply that changed its units (a retry starts the failed
		// ones) or its hooks, and only then, so that a retry
		// writes nothing on the nodes it leaves alone.
		if o.changed || o.hash != old.AppliedHash {
			st.Retry = o.retry
		}
	case leave:
		if len(units) == 0 {
			st.Phase = v1alpha1.NodePending
		}
	}
	if st.Phase == "" {
		st.Phase = v1alpha1.NodeSucceeded
		if st.Message != "" {
			st.Phase = v1alpha1.NodeFailed
		}
	}
	if st.Phase != v1alpha1.NodeRemoved {
		st.Hooks = hookResults(units, hh)
		for _, h := range st.Hooks {
			switch {
			case hookFailed(h):
				st.Phase = v1alpha1.NodeFailed
			case st.Phase == v1alpha1.NodeSucceeded && hookRunning(h):
				st.Phase = v1alpha1.NodeApplying
			}
		}
	}
	if o.waiting != "" && st.Phase != v1alpha1.NodeFailed {
		st.Phase, st.Message = o.waitPhase, o.waiting
	}
	st.AppliedAt = old.AppliedAt
	if o.changed || st.AppliedHash != old.AppliedHash ||
		st.Phase == v1alpha1.NodeRemoved && old.Phase != v1alpha1.NodeRemoved && old.Phase != "" {
		t := metav1.NewTime(now).Rfc3339Copy()
		st.AppliedAt = &t
	}
	return st
}

func hookFailed(h v1alpha1.HookResult) bool {
	return h.Phase == apply.PhaseFailed || h.Phase == "failed"
}

func hookRunning(h v1alpha1.HookResult) bool {
	switch h.Phase {
	case apply.PhaseRunning, "activating", "reloading", "deactivating":
		return true
	}
	return false
}

// hookResults are the reports of a set's units as NodeHooks hook results,
// in the order of the hooks of hh (when known), output kept only for
// failures.
func hookResults(units []apply.UnitReport, hh *v1alpha1.HostHooks) []v1alpha1.HookResult {
	index := func(hook string) int {
		if hh == nil {
			return 0 // by unit name
		}
		for i, h := range hh.Spec.Hooks {
			if h.Name == hook {
				return i
			}
		}
		return len(hh.Spec.Hooks) // after the hooks of hh: units of hooks it no longer has
	}
	units = slices.Clone(units)
	sort.SliceStable(units, func(i, j int) bool {
		a, b := index(units[i].Hook), index(units[j].Hook)
		if a != b {
			return a < b
		}
		return units[i].Unit < units[j].Unit
	})
	var out []v1alpha1.HookResult
	for _, r := range units {
		h := v1alpha1.HookResult{Name: r.Hook, Unit: r.Unit, Phase: r.Phase}
		if h.Name == "" {
			h.Name = r.Unit
		}
		failed := r.Failed()
		switch {
		case r.Error != "":
			h.Phase, h.Message = "unknown", r.Error
		case h.Phase == "":
			h.Phase = r.ActiveState
			if failed {
				h.Phase = "failed"
			}
		case failed && h.Phase != apply.PhaseFailed:
			h.Phase = apply.PhaseFailed
		}
		if failed {
			if r.ExecMainCode == apply.CLDExited && r.ExecMainStatus != 0 {
				code := r.ExecMainStatus
				h.ExitCode = &code
			}
			if r.Result != "" && r.Result != "success" {
				h.Reason = r.Result
			}
			switch r.LoadState {
			case "error", "bad-setting", "not-found":
				h.Reason, h.Message = "load "+r.LoadState, "systemd could not load the unit: see journalctl -u "+r.Unit
			}
			if h.Message == "" && r.StepsNote != "" {
				h.Message = r.StepsNote
			}
			h.Output = r.Journal
		}
		for _, s := range r.Steps {
			h.Steps = append(h.Steps, v1alpha1.StepResult{Name: s.Name, State: s.State, ExitCode: s.ExitCode,
				Signal: s.Signal, Reason: s.Reason, StartedAt: metaTime(s.Start), FinishedAt: metaTime(s.End)})
		}
		out = append(out, h)
	}
	return out
}

// metaTime is t at the precision the API keeps (seconds), so that a status
// read back compares equal to the one written.
func metaTime(t *time.Time) *metav1.Time {
	if t == nil {
		return nil
	}
	m := metav1.NewTime(*t).Rfc3339Copy()
	return &m
}
