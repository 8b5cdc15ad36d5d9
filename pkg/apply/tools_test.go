package apply_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/pkg/apply"
)

// nodeTools stands for the node's programs run by its systemd: it records
// what it is asked to run, and does what systemd-sysusers and chpasswd do
// to the node's files (below root), so that the apply goes on.
type nodeTools struct {
	root  string
	calls [][]string
	stdin []string
	fail  error
}

func (f *nodeTools) Run(_ context.Context, argv []string, stdin []byte) ([]byte, error) {
	f.calls = append(f.calls, slices.Clone(argv))
	f.stdin = append(f.stdin, string(stdin))
	if f.fail != nil {
		return []byte("chpasswd: (line 1, user app) password not changed\n"), f.fail
	}
	add := func(file, line string) {
		fh, err := os.OpenFile(f.root+file, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
		if err == nil {
			fh.WriteString(line)
			fh.Close()
		}
	}
	switch argv[0] {
	case "/usr/sbin/systemd-sysusers":
		add("/etc/group", "app:x:2001:\n")
		add("/etc/passwd", "app:x:2001:2001::/:/usr/sbin/nologin\n")
	case "/usr/sbin/chpasswd":
		name, hash, _ := strings.Cut(strings.TrimSpace(string(stdin)), ":")
		add("/etc/shadow", name+":"+hash+":20000::::::\n")
	}
	return nil, nil
}

const toolsHash = "$6$hostprovtest$AmKhFLXrNyLI80o/DRjMX/vW3zY3mj6d9JrhyaGfXAUHl62u6dUmatWvlLbTwXpUj09vRofhDZFjCjlEzQDc/0"

const toolsSpec = `- name: app
  exec: [/usr/bin/app]
  users: [{name: app, uid: 2001, passwordHash: "` + toolsHash + `"}]
  files: [{path: /etc/app/app.conf, contents: "x\n", user: app}]
`

// With Options.Tools the node's own systemd-sysusers and chpasswd run, as
// the node names them: found in the node's PATH below Root (not in this
// machine's), given node paths and no --root, and the hash on standard
// input only.
func TestToolsRunOnNode(t *testing.T) {
	n := newNode(t)
	n.writeNode("/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n")
	n.writeNode("/etc/group", "root:x:0:\n")
	tools := &nodeTools{root: n.root}
	withTools := func(o *apply.Options) { o.Tools = tools }

	// This machine's systemd-sysusers does not count: the node has none.
	p, err := n.planStorage(toolsSpec, withTools)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Conflicts) != 1 || !strings.Contains(p.Conflicts[0].Message, "the node has none") ||
		!strings.Contains(p.Conflicts[0].Message, "systemd-sysusers") {
		t.Fatalf("conflicts without the node's systemd-sysusers: %v", p.Conflicts)
	}

	// The node's /usr/sbin is a link to /usr/bin: followed in the node's
	// tree, not this machine's.
	for _, tool := range []string{"/usr/bin/systemd-sysusers", "/usr/bin/chpasswd"} {
		n.writeNode(tool, "#!/bin/false\n")
		if err := os.Chmod(n.at(tool), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/usr/bin", n.at("/usr/sbin")); err != nil {
		t.Fatal(err)
	}
	p, _, err = n.applyStorage(toolsSpec, withTools)
	if err != nil {
		t.Fatalf("apply: %v (conflicts %v)", err, p.Conflicts)
	}
	want := [][]string{{"/usr/sbin/systemd-sysusers", "/etc/sysusers.d/hostprov.conf"}, {"/usr/sbin/chpasswd", "-e"}}
	if fmt.Sprint(tools.calls) != fmt.Sprint(want) {
		t.Errorf("ran %q, want %q", tools.calls, want)
	}
	if len(tools.stdin) != 2 || tools.stdin[0] != "" || tools.stdin[1] != "app:"+toolsHash+"\n" {
		t.Errorf("standard inputs %q; want none for systemd-sysusers, the user and hash for chpasswd", tools.stdin)
	}
	if got := n.readNode("/etc/app/app.conf"); got != "x\n" {
		t.Errorf("/etc/app/app.conf: %q", got)
	}
	if u, _ := n.owner("/etc/app/app.conf"); u != 2001 {
		t.Errorf("/etc/app/app.conf is uid %d's, want app's 2001", u)
	}

	// A failing tool stops the apply with what it said and how it
	// ended, and never the hash.
	n.writeNode("/etc/shadow", "app:!:20000::::::\n")
	tools.calls, tools.stdin = nil, nil
	tools.fail = errors.New("exit status 1")
	_, _, err = n.applyStorage(toolsSpec, withTools)
	if err == nil || !strings.Contains(err.Error(), "chpasswd -e (the password of app): exit status 1: chpasswd: (line 1, user app) password not changed") {
		t.Fatalf("apply with a failing chpasswd: %v", err)
	}
	if strings.Contains(err.Error(), toolsHash) {
		t.Errorf("the error shows the hash: %v", err)
	}
	if len(tools.calls) != 1 || slices.Contains(tools.calls[0], "--root") {
		t.Errorf("ran %q, want chpasswd alone, with no --root", tools.calls)
	}
}
