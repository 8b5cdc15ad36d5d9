package cli

import (
	"os"
	"strings"
	"testing"
)

// Until apply creates accounts, plan and apply refuse a spec's users and
// groups at their entries and change nothing; render carries them.
func TestApplyRefusesAccounts(t *testing.T) {
	n := newLiveNode(t)
	n.write("- name: hello\n  exec: [/bin/echo, hello]\n  users: [{name: app}]\n  groups: [{name: ops}]\n")
	for _, cmd := range []string{"plan", "apply"} {
		code, _, e := n.run(cmd)
		if code == 0 || !strings.Contains(e, ":6:11: error: user app: hostprov apply does not create users or groups yet") ||
			!strings.Contains(e, ":7:12: error: group ops:") || !strings.Contains(e, "--format ignition, butane or cloud-init") {
			t.Errorf("%s: exit %d\n%s", cmd, code, e)
		}
	}
	if ents, _ := os.ReadDir(n.unitDir); len(ents) > 0 {
		t.Errorf("apply wrote %d entries to the unit directory", len(ents))
	}
	if len(n.sd.Calls()) > 0 {
		t.Errorf("apply talked to systemd: %v", n.sd.Calls())
	}
}
