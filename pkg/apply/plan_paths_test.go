package apply_test

import (
	"strings"
	"testing"

	"github.com/hostprov/hostprov/pkg/apply"
)

// A user the node does not know is an error of the plan that names the
// hook and the entry's place.
func TestPathsUnknownUser(t *testing.T) {
	n := nodeWithUsers(t)
	_, err := n.planStorage("- name: app\n  files: [{path: /etc/a, contents: x, user: nobody-here}]\n")
	if err == nil || !strings.Contains(err.Error(), "spec.yaml:") || !strings.Contains(err.Error(), "hook app") ||
		!strings.Contains(err.Error(), `user "nobody-here" is not in the node's /etc/passwd`) {
		t.Fatalf("err = %v", err)
	}
}

// Without systemd-sysusers a spec with accounts is a conflict: nothing is
// written.
func TestAccountsNoSysusers(t *testing.T) {
	defer apply.SetSysusers("hostprov-no-such-sysusers")()
	n := newNode(t)
	p, err := n.planStorage("- name: a\n  exec: [/bin/a]\n  groups: [{name: ops}]\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Conflicts) != 1 || !strings.Contains(p.Conflicts[0].Message, "spec.yaml:6:12: the spec has users or groups, which hostprov creates with systemd-sysusers") {
		t.Fatalf("conflicts: %v", p.Conflicts)
	}
	if _, _, err := n.applyStorage("- name: a\n  exec: [/bin/a]\n  groups: [{name: ops}]\n"); err == nil {
		t.Fatal("apply without systemd-sysusers succeeded")
	}
	if !n.gone("/etc/sysusers.d") {
		t.Error("apply wrote the sysusers.d file")
	}
}
