package apply_test

import (
	"bytes"
	"strings"
	"testing"
)

// devMount is a mount of a device that another hook would create, with a
// deviceTimeout: a drop-in for the device's unit.
const devMount = "- name: mnt-lun.mount\n  deviceTimeout: 10min\n  manifest: |\n    What=/dev/disk/by-label/lun\n    Where=/mnt/lun\n"

const devUnit = `dev-disk-by\x2dlabel-lun.device`

// A deviceTimeout's drop-in is written and systemd reloaded, and the device
// unit is never started, restarted or enabled: systemd refuses such jobs for
// a device, whose unit follows the kernel's device, and the new timeout
// applies from the reload on. It is recorded as the hook's, and pruned with
// it.
func TestDeviceTimeoutApply(t *testing.T) {
	n := newNode(t)
	_, calls := n.mustApply(devMount)
	checkCalls(t, calls, "enable mnt-lun.mount", "reload", "start mnt-lun.mount")
	if got := n.read(devUnit + ".d/50-device-timeout.conf"); !strings.HasSuffix(got, "\n[Unit]\nJobRunningTimeoutSec=10min\n") {
		t.Errorf("the drop-in:\n%s", got)
	}
	st := n.state()
	u := st.Unit(devUnit)
	if u == nil || u.Hook != "mnt-lun.mount" || u.Enabled != nil || len(u.Files) != 1 || u.Files[0].Path != devUnit+".d/50-device-timeout.conf" {
		t.Fatalf("state of %s: %+v", devUnit, u)
	}

	// The device is there (active), and the timeout changes.
	n.sd.SetActive(devUnit, true)
	n.sd.SetActive("mnt-lun.mount", true)
	changed := strings.Replace(devMount, "10min", "20min", 1)
	var b bytes.Buffer
	if err := n.plan(changed).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if plan := b.String(); !strings.Contains(plan, devUnit) || strings.Contains(plan, "restart") {
		t.Errorf("plan of a changed deviceTimeout: want the drop-in's change and no restart:\n%s", plan)
	}
	_, calls = n.mustApply(changed)
	checkCalls(t, calls, "reload")
	if got := n.read(devUnit + ".d/50-device-timeout.conf"); !strings.Contains(got, "JobRunningTimeoutSec=20min") {
		t.Errorf("the drop-in after the change:\n%s", got)
	}

	// Without deviceTimeout the drop-in goes, and still nothing restarts
	// the device.
	_, calls = n.mustApply(strings.Replace(devMount, "  deviceTimeout: 10min\n", "", 1))
	checkCalls(t, calls, "reload")
	if n.exists(devUnit+".d") || n.state().Unit(devUnit) != nil {
		t.Errorf("the drop-in or its state is still there")
	}

	// Removing the hook removes its drop-in with the mount.
	n.mustApply(devMount)
	_, calls = n.mustApply("")
	checkCalls(t, calls, "stop mnt-lun.mount", "disable mnt-lun.mount", "reload")
	if n.exists(devUnit+".d") || n.exists("mnt-lun.mount") {
		t.Errorf("the mount or the drop-in is still there")
	}
}
