package apply_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRigDeviceTimeout applies mounts with and without deviceTimeout in a
// real systemd and reads back how long systemd waits for each device: the
// deviceTimeout, from the drop-in apply wrote and the reload alone, or
// systemd's default without one. That a mount then waits that long for
// its device is for the VM test to show: systemd runs in a container in
// the rig, where it supports no device units and mounts without waiting.
func TestRigDeviceTimeout(t *testing.T) {
	t.Parallel()
	ctx := rigContext(t)
	n := newRigNode(ctx, t)
	mount := func(name, label, extra string) string {
		return "- name: " + name + ".mount\n  enabled: false\n" + extra +
			"  manifest: |\n    What=/dev/disk/by-label/" + label + "\n    Where=/" + strings.ReplaceAll(name, "-", "/") + "\n"
	}
	spec := "apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n" +
		mount("mnt-slow", "slow", "  deviceTimeout: 7min 3s\n") +
		mount("mnt-plain", "plain", "")
	_, res := n.mustApply(ctx, spec)
	for _, e := range res.Events {
		if strings.Contains(e.Text(), ".device") && !strings.Contains(e.Text(), "50-device-timeout.conf") {
			t.Errorf("apply acted on a device unit: %s", e.Text())
		}
	}

	show := func(unit string) string {
		t.Helper()
		out, err := n.r.Run(ctx, "systemctl", "show", "-p", "JobRunningTimeoutUSec", unit)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	if got, want := show(`dev-disk-by\x2dlabel-slow.device`), "JobRunningTimeoutUSec=7min 3s"; got != want {
		t.Errorf("the device of mnt-slow.mount: %s, want %s", got, want)
	}
	// Without deviceTimeout, a device's unit waits as long as systemd
	// starts any unit (DefaultTimeoutStartSec=, 90 s unless configured).
	def, err := n.r.Run(ctx, "systemctl", "show", "-p", "DefaultTimeoutStartUSec", "--value")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := show(`dev-disk-by\x2dlabel-plain.device`), "JobRunningTimeoutUSec="+strings.TrimSpace(def); got != want {
		t.Errorf("the device of mnt-plain.mount: %s, want systemd's default, %s", got, want)
	}

}

// TestRigInstallChangeWithDropin: in a real systemd, a change of the
// [Install] of a unit that has a drop-in moves its enablement link, and the
// unit, whose body is the same, goes on running: the drop-in does not make
// the change one of the body.
func TestRigInstallChangeWithDropin(t *testing.T) {
	t.Parallel()
	ctx := rigContext(t)
	n := newRigNode(ctx, t)
	spec := func(install string) string {
		return "apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n- name: app\n  exec: [/bin/sleep, infinity]\n" + install +
			"  dropins:\n  - name: 10-env.conf\n    contents: \"[Service]\\nEnvironment=A=1\\n\"\n"
	}
	link := func(target string) string { return filepath.Join(n.r.UnitDir, target+".wants", "app.service") }
	n.mustApply(ctx, spec(""))
	if _, err := os.Lstat(link("multi-user.target")); err != nil {
		t.Fatalf("after the first apply: %v", err)
	}
	before := rigStatus(ctx, t, n.m, "app.service")

	_, res := n.mustApply(ctx, spec("  wantedBy: [graphical.target]\n"))
	if c := res.Counts; c.Writes != 1 || c.Disables != 1 || c.Enables != 1 || c.Restarts != 0 || c.Starts != 0 {
		t.Errorf("counts %+v; want the unit file written, disabled and enabled again, not restarted", c)
	}
	if _, err := os.Lstat(link("multi-user.target")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the link of the old WantedBy= is still there: %v", err)
	}
	if _, err := os.Lstat(link("graphical.target")); err != nil {
		t.Errorf("no link for the new WantedBy=: %v", err)
	}
	if st := rigStatus(ctx, t, n.m, "app.service"); st.ActiveState != "active" || !st.ActiveEnter.Equal(before.ActiveEnter) {
		t.Errorf("app.service %s, active since %v (was %v): want it running, not restarted", st.ActiveState, st.ActiveEnter, before.ActiveEnter)
	}
}
