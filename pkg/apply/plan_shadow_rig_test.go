package apply_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/pkg/apply"
)

// TestRigShadowRefused runs hostprov apply in a real systemd with a spec
// whose hooks are named like two units of the node: systemd-journald, a
// vendor unit of /usr/lib/systemd/system that runs, and node-agent, one
// the test installs in /usr/local/lib/systemd/system and starts. The apply
// is refused with both conflicts, writes nothing, and both units go on
// running as they were; a drop-in-only hook, the route the conflict
// points to, is applied to the node's unit.
func TestRigShadowRefused(t *testing.T) {
	t.Parallel()
	ctx := rigContext(t)
	n := newRigNodeWithHostprov(ctx, t)
	const agentUnit = "[Unit]\nDescription=the node's own agent\n\n[Service]\nExecStart=/bin/sleep infinity\n"
	if out, err := n.r.Run(ctx, "sh", "-ec", `mkdir -p /usr/local/lib/systemd/system
printf '%s' "$1" > /usr/local/lib/systemd/system/node-agent.service
systemctl daemon-reload
systemctl start node-agent.service`, "sh", agentUnit); err != nil {
		t.Fatalf("installing node-agent.service: %v\n%s", err, out)
	}
	running := map[string]apply.UnitStatus{}
	for _, u := range []string{"systemd-journald.service", "node-agent.service"} {
		st := rigStatus(ctx, t, n.m, u)
		if st.ActiveState != "active" {
			t.Fatalf("%s is %s before the apply; the test needs it running", u, st.ActiveState)
		}
		running[u] = st
	}

	spec := `apiVersion: hostprov/v1alpha1
kind: Hooks
hooks:
- name: systemd-journald.service
  exec: [/bin/sleep, infinity]
- name: node-agent
  exec: [/bin/sleep, infinity]
`
	if err := os.WriteFile(filepath.Join(n.r.Root, "root/shadow.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := n.r.Run(ctx, "/opt/hostprov", "apply", "-f", "/root/shadow.yaml")
	if err == nil {
		t.Fatalf("hostprov apply of hooks named like the node's units succeeded:\n%s", out)
	}
	msg := out + "\n" + err.Error()
	for _, want := range []string{
		"/usr/lib/systemd/system/systemd-journald.service", "/usr/local/lib/systemd/system/node-agent.service",
		"dropins", "nothing was changed",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("hostprov apply's refusal lacks %q:\n%s", want, msg)
		}
	}
	for _, u := range []string{"systemd-journald.service", "node-agent.service"} {
		if _, err := os.Lstat(filepath.Join(n.r.UnitDir, u)); !os.IsNotExist(err) {
			t.Errorf("%s was written to /etc/systemd/system (%v)", u, err)
		}
	}
	if st, err := apply.LoadState(apply.StatePath(n.opts.StateDirPath())); err != nil || len(st.Units) != 0 {
		t.Errorf("state after the refused apply: %+v, %v; want no units", st, err)
	}
	for u, before := range running {
		st := rigStatus(ctx, t, n.m, u)
		if st.ActiveState != "active" || !st.ActiveEnter.Equal(before.ActiveEnter) || st.UnitFileState != before.UnitFileState {
			t.Errorf("%s after the refused apply: %+v; want it running as before, not restarted (%+v)", u, st, before)
		}
	}

	// The drop-in route: the node's unit gets the hook's drop-in, and
	// stays the node's.
	dropin := `apiVersion: hostprov/v1alpha1
kind: Hooks
hooks:
- name: node-agent
  dropins:
  - name: 10-env.conf
    contents: "[Service]\nEnvironment=FROM_HOOK=1\n"
`
	if err := os.WriteFile(filepath.Join(n.r.Root, "root/dropin.yaml"), []byte(dropin), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := n.r.Run(ctx, "/opt/hostprov", "apply", "-f", "/root/dropin.yaml"); err != nil {
		t.Fatalf("hostprov apply of a drop-in on the node's unit: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(n.r.UnitDir, "node-agent.service.d/10-env.conf")); err != nil {
		t.Errorf("the drop-in: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(n.r.UnitDir, "node-agent.service")); !os.IsNotExist(err) {
		t.Errorf("a unit file node-agent.service was written (%v)", err)
	}
	if st := rigStatus(ctx, t, n.m, "node-agent.service"); st.ActiveState != "active" {
		t.Errorf("node-agent.service after the drop-in: %+v; want it running", st)
	}
}
