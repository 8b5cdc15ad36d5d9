package apply_test

import (
	"strings"
	"testing"
)

// An owner that neither the node nor the spec has stays the plan error it
// was; one with an id the spec gives needs no systemd-sysusers run to be
// known, and an account that exists with another id is a warning.
func TestAccountsOwners(t *testing.T) {
	needSysusers(t)
	n := newNode(t)
	n.writeNode("/etc/passwd", "root:x:0:0:root:/root:/bin/sh\nweb:x:1500:1500::/:/bin/sh\n")
	n.writeNode("/etc/group", "root:x:0:\nweb:x:1500:\n")
	if _, err := n.planStorage("- name: a\n  exec: [/bin/a]\n  files: [{path: /etc/a, contents: x, user: nobody2}]\n"); err == nil ||
		!strings.Contains(err.Error(), `user "nobody2" is not in the node's /etc/passwd`) {
		t.Errorf("an unknown owner: %v", err)
	}
	spec := "- name: a\n  exec: [/bin/a]\n  users: [{name: app, uid: 2001}, {name: web, uid: 1600}]\n  files: [{path: /etc/a, contents: x, user: app}]\n"
	p, err := n.planStorage(spec)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	p.WriteText(&b)
	if !strings.Contains(b.String(), "owner 2001:0") {
		t.Errorf("the owner's given id is not in the plan:\n%s", b.String())
	}
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0].Message, "user web exists on the node with id 1500, and the spec gives 1600") {
		t.Errorf("warnings: %v", p.Warnings)
	}
	n.mustApplyStorage(spec)
	if u, _ := n.owner("/etc/a"); u != 2001 || n.accountID("/etc/passwd", "app") != 2001 || n.accountID("/etc/passwd", "web") != 1500 {
		t.Errorf("owner %d, app %d, web %d", u, n.accountID("/etc/passwd", "app"), n.accountID("/etc/passwd", "web"))
	}
}
