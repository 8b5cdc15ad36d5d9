package apply_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

const appSpec = `- name: app
  exec: [/usr/bin/app]
  files:
    - {path: /etc/app/config.toml, contents: "listen = 9100\n", mode: 0600, user: app, group: "0"}
  directories: [{path: /var/lib/app, mode: 0750, user: app, group: app}]
  links: [{path: /etc/app/current, target: /opt/app}]
`

// A hook's file, directory and link are placed with their modes and
// owners (names resolved in the node's /etc/passwd and /etc/group), the
// parent hostprov had to make is recorded, a re-apply changes nothing, a
// changed file restarts the hook's unit, and pruning removes them all.
func TestPathsLifecycle(t *testing.T) {
	needRoot(t)
	n := nodeWithUsers(t)
	p, _ := n.mustApplyStorage(appSpec)
	if a, c, r := p.Counts(); a != 4 || c != 0 || r != 0 {
		t.Errorf("counts = %d %d %d, want 4 added (unit, file, directory, link)", a, c, r)
	}
	if got := n.readNode("/etc/app/config.toml"); got != "listen = 9100\n" {
		t.Errorf("config = %q", got)
	}
	if uid, gid, mode := owner(t, n.at("/etc/app/config.toml")); uid != 1234 || gid != 0 || mode.Perm() != 0o600 {
		t.Errorf("config: %d:%d %v, want 1234:0 0600", uid, gid, mode)
	}
	if uid, gid, mode := owner(t, n.at("/var/lib/app")); uid != 1234 || gid != 1234 || mode.Perm() != 0o750 || !mode.IsDir() {
		t.Errorf("/var/lib/app: %d:%d %v, want a directory 1234:1234 0750", uid, gid, mode)
	}
	if target, err := os.Readlink(n.at("/etc/app/current")); err != nil || target != "/opt/app" {
		t.Errorf("link: %q %v", target, err)
	}
	st := n.state()
	if st.Version != 2 {
		t.Errorf("state version %d, want 2 with paths", st.Version)
	}
	if sp := st.Path("/etc/app"); sp == nil || !sp.Parent || sp.Inode == 0 {
		t.Errorf("/etc/app in the state: %+v, want a parent with its inode", sp)
	}
	if sp := st.Path("/etc/app/config.toml"); sp == nil || sp.Inode == 0 || sp.SHA256 == "" || sp.Hook != "app" {
		t.Errorf("config in the state: %+v", sp)
	}

	again, err := n.planStorage(appSpec)
	if err != nil {
		t.Fatal(err)
	}
	if again.HasChanges() || len(again.Actions) != 0 {
		var b bytes.Buffer
		again.WriteText(&b)
		t.Errorf("re-apply plans changes:\n%s", b.String())
	}

	n.sd.SetActive("app.service", true)
	changed := strings.Replace(appSpec, "9100", "9200", 1)
	p, calls := n.mustApplyStorage(changed)
	if !strings.Contains(join(calls), "restart app.service") {
		t.Errorf("calls = %v, want app.service restarted for its changed file", calls)
	}
	if strings.Contains(join(calls), "reload") {
		t.Errorf("calls = %v: no unit file changed, so no daemon-reload", calls)
	}
	var b bytes.Buffer
	p.WriteText(&b)
	for _, want := range []string{"# change file /etc/app/config.toml (hook app, mode 0600, owner 1234:0, content changed)", "-listen = 9100", "+listen = 9200",
		"restart  app.service  a file of its hook changed: /etc/app/config.toml"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("plan text lacks %q:\n%s", want, b.String())
		}
	}
	j, _ := json.Marshal(p)
	if !strings.Contains(string(j), `"kind":"file"`) || !strings.Contains(string(j), `"hook":"app"`) {
		t.Errorf("plan JSON lacks the file's kind and hook: %s", j)
	}

	p, _ = n.mustApplyStorage("- name: app\n  exec: [/usr/bin/app]\n")
	if a, c, r := p.Counts(); a != 0 || c != 0 || r != 3 {
		t.Errorf("prune counts = %d %d %d, want 3 removed", a, c, r)
	}
	for _, gone := range []string{"/etc/app/config.toml", "/etc/app/current", "/etc/app", "/var/lib/app"} {
		if !n.gone(gone) {
			t.Errorf("%s was not pruned", gone)
		}
	}
	if n.gone("/etc/passwd") {
		t.Error("/etc went with /etc/app")
	}
	if st := n.state(); len(st.Paths) != 0 || st.Version != 1 {
		t.Errorf("state after prune: version %d, paths %+v; want version 1 and none", st.Version, st.Paths)
	}
}
