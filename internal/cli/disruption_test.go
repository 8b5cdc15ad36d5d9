package cli

import (
	"strings"
	"testing"
)

// A hook that declares a disruption is applied by hostprov apply as any
// other, and plan and apply say what it needs, as long as it changes:
// hostprov neither drains nor reboots a machine, and never silently.
func TestApplySaysDisruption(t *testing.T) {
	n := newLiveNode(t)
	n.write("- name: kernel-args\n  exec: [/bin/true]\n  disruption: Reboot\n" +
		"- name: runtime\n  exec: [/bin/true]\n  disruption: Drain\n" +
		"- name: plain\n  exec: [/bin/true]\n")
	code, _, e := n.run("plan")
	if code != 0 || !strings.Contains(e, "hook kernel-args declares disruption: Reboot: a reboot will be needed after the apply") ||
		!strings.Contains(e, "hook runtime declares disruption: Drain: move the machine's workloads away") || strings.Contains(e, "plain") {
		t.Errorf("plan: exit %d\n%s", code, e)
	}
	code, _, e = n.run("apply")
	if code != 0 || !strings.Contains(e, "hook kernel-args declares disruption: Reboot: a reboot is needed to finish applying it") ||
		!strings.Contains(e, "hook runtime declares disruption: Drain; hostprov apply does not drain") {
		t.Errorf("apply: exit %d\n%s", code, e)
	}
	if got := strings.Join(n.sd.Log(), "; "); strings.Contains(got, "reboot") {
		t.Errorf("apply asked systemd to reboot: %s", got)
	}
	// Unchanged, the hooks need nothing.
	if code, _, e := n.run("apply"); code != 0 || strings.Contains(e, "disruption") {
		t.Errorf("re-apply: exit %d\n%s", code, e)
	}
	n.write("- name: kernel-args\n  exec: [/bin/echo, changed]\n  disruption: Reboot\n" +
		"- name: runtime\n  exec: [/bin/true]\n  disruption: Drain\n" +
		"- name: plain\n  exec: [/bin/true]\n")
	if code, _, e := n.run("apply"); code != 0 || !strings.Contains(e, "hook kernel-args declares disruption: Reboot") || strings.Contains(e, "hook runtime") {
		t.Errorf("apply of a changed hook: exit %d\n%s", code, e)
	}
}
