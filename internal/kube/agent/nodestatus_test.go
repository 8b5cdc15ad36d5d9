package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/apply"
)

// A set whose HostHooks is gone but whose units could not be removed yet
// is Failed, with its units, the message of the prune, and its hash kept:
// never Removed while the node still has them.
func TestStatusPruneNotDone(t *testing.T) {
	nh := nodeHooks(hostHooks("gone", nil, service("a")), true)
	nh.Status = v1alpha1.NodeHooksStatus{Phase: v1alpha1.NodeSucceeded, AppliedHash: nh.Spec.HooksHash}
	reports := []apply.UnitReport{
		{Unit: "b.service", Hook: "b", Set: "hosthooks.gone", ActiveState: "active"},
		{Unit: "a.service", Hook: "a", Set: "hosthooks.gone", ActiveState: "failed", Result: "exit-code", ExecMainCode: apply.CLDExited, ExecMainStatus: 2},
		{Unit: "other.service", Set: "local", ActiveState: "failed"},
	}
	st := status(nh, nil, &outcome{action: prune, message: "its units could not be removed: stop a.service: boom"}, reports, time.Now())
	if st.Phase != v1alpha1.NodeFailed || st.AppliedHash != nh.Spec.HooksHash || !strings.Contains(st.Message, "boom") || len(st.Hooks) != 2 ||
		st.Hooks[0].Unit != "a.service" || st.Hooks[0].ExitCode == nil || *st.Hooks[0].ExitCode != 2 || st.Hooks[1].Unit != "b.service" {
		t.Errorf("status %+v; want Failed at the old hash with the prune's message and its two units, a first", st)
	}
	if st.AppliedAt != nil {
		t.Errorf("appliedAt %v: nothing happened to the set", st.AppliedAt)
	}
}
