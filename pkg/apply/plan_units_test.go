package apply_test

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/pkg/apply"
)

func TestChangeBody(t *testing.T) {
	n := newNode(t)
	n.mustApply(twoHooks)
	changed := strings.Replace(twoHooks, "[/bin/echo, hello]", "[/bin/echo, bonjour]", 1)
	p := n.plan(changed)
	if got := p.Summary(); got != "Plan: 0 to add, 1 to change, 0 to remove." {
		t.Errorf("summary %q", got)
	}
	res, calls := n.mustApply(changed)
	checkCalls(t, calls, "reload", "restart hello.service")
	if c := res.Counts; c.Writes != 1 || c.Reloads != 1 || c.Restarts != 1 || c.Enables != 0 {
		t.Errorf("counts %+v", c)
	}
}

func TestOneshotIsRerun(t *testing.T) {
	n := newNode(t)
	n.mustApply(twoHooks)
	changed := strings.Replace(twoHooks, "[/bin/true]", "[/bin/false]", 1)
	p := n.plan(changed)
	var reason string
	for _, a := range p.Actions {
		if a.Kind == apply.ActRestart {
			reason = a.Reason
		}
	}
	if !strings.Contains(reason, "runs again") {
		t.Errorf("restart reason %q, want a oneshot re-run", reason)
	}
}

func TestChangeOnlyInstall(t *testing.T) {
	n := newNode(t)
	n.mustApply(twoHooks)
	changed := strings.Replace(twoHooks, "[/bin/echo, hello]\n", "[/bin/echo, hello]\n  wantedBy: [graphical.target]\n", 1)
	res, calls := n.mustApply(changed)
	checkCalls(t, calls, "disable hello.service", "enable hello.service", "reload")
	if c := res.Counts; c.Writes != 1 || c.Restarts != 0 || c.Starts != 0 {
		t.Errorf("counts %+v", c)
	}
}

// TestChangeOnlyInstallWithDropin: a unit's drop-in does not hide a change
// of its [Install]: the unit is enabled again, not restarted.
func TestChangeOnlyInstallWithDropin(t *testing.T) {
	n := newNode(t)
	withDropin := strings.Replace(twoHooks, "[/bin/echo, hello]\n", "[/bin/echo, hello]\n  dropins:\n  - name: 10-x.conf\n    contents: \"[Service]\\nEnvironment=A=1\\n\"\n", 1)
	n.mustApply(withDropin)
	changed := strings.Replace(withDropin, "[/bin/echo, hello]\n", "[/bin/echo, hello]\n  wantedBy: [graphical.target]\n", 1)
	res, calls := n.mustApply(changed)
	checkCalls(t, calls, "disable hello.service", "enable hello.service", "reload")
	if c := res.Counts; c.Writes != 1 || c.Restarts != 0 || c.Starts != 0 {
		t.Errorf("counts %+v", c)
	}
}

func TestCommentOnlyChangeWritesWithoutRestart(t *testing.T) {
	n := newNode(t)
	raw := "- name: r.service\n  useRawName: true\n  useRawManifest: true\n  manifest: |\n    [Service]\n    ExecStart=/bin/true\n    [Install]\n    WantedBy=multi-user.target\n"
	n.mustApply(raw)
	_, calls := n.mustApply(strings.Replace(raw, "    [Service]\n", "    # a comment\n    [Service]\n", 1))
	checkCalls(t, calls, "reload")
}

func TestEnabledFalse(t *testing.T) {
	n := newNode(t)
	n.mustApply(twoHooks)
	_, calls := n.mustApply(twoHooks + "  enabled: false\n")
	checkCalls(t, calls, "stop prep.service", "disable prep.service", "reload")
	if n.sd.Active("prep.service") || n.sd.Enabled("prep.service") {
		t.Errorf("prep.service still active or enabled: %v", n.sd.State())
	}
	// And back.
	_, calls = n.mustApply(twoHooks)
	checkCalls(t, calls, "enable prep.service", "reload", "start prep.service")
}

func TestMask(t *testing.T) {
	n := newNode(t)
	n.mustApply(twoHooks)
	masked := "- name: hello\n  exec: [/bin/echo, hello]\n- name: prep.service\n  mask: true\n"
	p := n.plan(masked)
	if got := p.Summary(); got != "Plan: 0 to add, 1 to change, 0 to remove." {
		t.Errorf("summary %q", got)
	}
	_, calls := n.mustApply(masked)
	checkCalls(t, calls, "stop prep.service", "disable prep.service", "mask prep.service", "reload")
	if n.exists("prep.service") {
		t.Error("prep.service's file is still there")
	}
	if !n.sd.Masked("prep.service") {
		t.Error("prep.service is not masked")
	}
	// Unmask again: the file comes back, enabled and started.
	_, calls = n.mustApply(twoHooks)
	checkCalls(t, calls, "unmask prep.service", "enable prep.service", "reload", "start prep.service")
}

func TestRemoveHook(t *testing.T) {
	n := newNode(t)
	n.mustApply(twoHooks + "  dropins:\n  - name: 10-x.conf\n    contents: \"[Service]\\nEnvironment=A=1\\n\"\n")
	if !n.exists("prep.service.d/10-x.conf") {
		t.Fatal("drop-in not written")
	}
	// Modes: the drop-in directory 0755, the drop-in 0644, whatever the umask.
	for path, mode := range map[string]os.FileMode{"prep.service.d": 0o755, "prep.service.d/10-x.conf": 0o644} {
		if fi, err := os.Stat(n.unitPath(path)); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, %v; want %04o", path, fi.Mode(), err, mode)
		}
	}
	only := "- name: hello\n  exec: [/bin/echo, hello]\n"
	p := n.plan(only)
	if got := p.Summary(); got != "Plan: 0 to add, 0 to change, 1 to remove." {
		t.Errorf("summary %q", got)
	}
	res, calls := n.mustApply(only)
	checkCalls(t, calls, "stop prep.service", "disable prep.service", "reload")
	if c := res.Counts; c.Removes != 2 {
		t.Errorf("counts %+v", c)
	}
	if n.exists("prep.service") || n.exists("prep.service.d") {
		t.Error("prep.service or its drop-in directory is still there")
	}
	if st := n.state(); st.Unit("prep.service") != nil {
		t.Errorf("prep.service still in the state")
	}
}

func TestForeignFile(t *testing.T) {
	n := newNode(t)
	os.WriteFile(n.unitPath("hello.service"), []byte("[Service]\nExecStart=/bin/mine\n"), 0o644)
	p := n.plan(twoHooks)
	if len(p.Conflicts) != 1 || !strings.Contains(p.Conflicts[0].String(), "--adopt") {
		t.Fatalf("conflicts: %v", p.Conflicts)
	}
	_, calls, err := n.apply(twoHooks)
	if err == nil || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("apply over a foreign file: %v", err)
	}
	checkCalls(t, calls)
	if got := n.read("hello.service"); got != "[Service]\nExecStart=/bin/mine\n" {
		t.Errorf("foreign file changed:\n%s", got)
	}
	if n.exists("prep.service") {
		t.Error("a conflicting plan wrote files")
	}
	// --adopt takes it over.
	n.mustApply(twoHooks, adopt)
	if !strings.Contains(n.read("hello.service"), "/bin/echo hello") {
		t.Error("--adopt did not write the file")
	}
	if n.plan(twoHooks).HasChanges() {
		t.Error("not converged after --adopt")
	}
}

func TestForeignUnitOfAnotherNameIsUntouched(t *testing.T) {
	n := newNode(t)
	os.WriteFile(n.unitPath("other.service"), []byte("[Service]\nExecStart=/bin/other\n"), 0o644)
	n.mustApply(twoHooks)
	n.mustApply("")
	if got := n.read("other.service"); got != "[Service]\nExecStart=/bin/other\n" {
		t.Errorf("other.service changed: %q", got)
	}
}

func TestDrift(t *testing.T) {
	n := newNode(t)
	n.mustApply(twoHooks)
	edited := "# edited by hand\n" + n.read("hello.service")
	os.WriteFile(n.unitPath("hello.service"), []byte(edited), 0o644)
	changed := strings.Replace(twoHooks, "[/bin/echo, hello]", "[/bin/echo, bonjour]", 1)
	p := n.plan(changed)
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0].Message, "--force") || len(p.Conflicts) != 0 {
		t.Fatalf("warnings %v conflicts %v", p.Warnings, p.Conflicts)
	}
	res, calls := n.mustApply(changed)
	checkCalls(t, calls)
	if res.Counts.Kept != 1 || n.read("hello.service") != edited {
		t.Errorf("drifted file overwritten without --force (counts %+v)", res.Counts)
	}
	// --force overwrites it, and then all is as the spec says.
	_, calls = n.mustApply(changed, force)
	checkCalls(t, calls, "reload", "restart hello.service")
	if !strings.Contains(n.read("hello.service"), "bonjour") {
		t.Error("--force did not overwrite")
	}
	if p := n.plan(changed); p.HasChanges() || len(p.Warnings) != 0 {
		t.Errorf("after --force: %s %v", p.Summary(), p.Warnings)
	}
}

func TestFailedStart(t *testing.T) {
	n := newNode(t)
	n.sd.FailOn("start", "prep.service", errors.New("job failed"))
	_, calls, err := n.apply(twoHooks)
	if err == nil || !strings.Contains(err.Error(), "result exit-code, exit status 1") || !strings.Contains(err.Error(), "run hostprov apply again") {
		t.Fatalf("failed start: %v", err)
	}
	checkCalls(t, calls, "enable hello.service prep.service", "reload", "start hello.service", "start prep.service")
	// A failed start is a result of an apply that finished, not an
	// interrupted apply.
	prep := n.state().Unit("prep.service")
	if !n.exists("prep.service") || prep.Incomplete || !prep.Failed || n.state().Unit("hello.service").Failed {
		t.Errorf("after a failed start: files or state wrong: %+v", n.state().Units)
	}
	// The next apply tries the start again, and only that: no link
	// changes, no reload, no restart of an "unfinished" apply.
	var acts []string
	for _, a := range n.plan(twoHooks).Actions {
		acts = append(acts, string(a.Kind)+" "+a.Unit+" ("+a.Reason+")")
	}
	if want := "start prep.service (retry: it failed to start at the last apply)"; join(acts) != want {
		t.Errorf("re-apply after a failed start plans %q, want %q", join(acts), want)
	}
	// It fails again: still failed, and retried again.
	_, calls, err = n.apply(twoHooks)
	checkCalls(t, calls, "start prep.service")
	if err == nil || !n.state().Unit("prep.service").Failed {
		t.Errorf("a second failed start: %v, state %+v", err, n.state().Unit("prep.service"))
	}
	// With --no-start nothing is started and the failure stays recorded.
	_, calls = n.mustApply(twoHooks, func(o *apply.Options) { o.NoStart = true })
	checkCalls(t, calls)
	if !n.state().Unit("prep.service").Failed {
		t.Error("--no-start forgot the failed start")
	}
	n.sd.FailOn("start", "prep.service", nil)
	_, calls = n.mustApply(twoHooks)
	checkCalls(t, calls, "start prep.service")
	if n.state().Unit("prep.service").Failed {
		t.Error("still marked failed after a successful start")
	}
	if n.plan(twoHooks).HasChanges() {
		t.Error("not converged")
	}
}

// TestFailedStartThenChanged: a unit that failed to start and whose hook
// then changed is restarted for the change, once; its failure is not
// retried on top.
func TestFailedStartThenChanged(t *testing.T) {
	n := newNode(t)
	n.sd.FailOn("start", "prep.service", errors.New("job failed"))
	if _, _, err := n.apply(twoHooks); err == nil {
		t.Fatal("the start did not fail")
	}
	n.sd.FailOn("start", "prep.service", nil)
	changed := strings.Replace(twoHooks, "exec: [/bin/true]", "exec: [/bin/true, again]", 1)
	if changed == twoHooks {
		t.Fatal("twoHooks changed; update this test")
	}
	_, calls := n.mustApply(changed)
	checkCalls(t, calls, "reload", "restart prep.service")
	if n.state().Unit("prep.service").Failed {
		t.Error("still marked failed")
	}
}

func TestTemplateStartsDefaultInstance(t *testing.T) {
	n := newNode(t)
	tmpl := "- name: w@.service\n  specifiers: true\n  exec: [/bin/echo, \"%i\"]\n  directives:\n    Install: [DefaultInstance=one]\n- name: t@.service\n  specifiers: true\n  exec: [/bin/echo, \"%i\"]\n  wantedBy: []\n"
	_, calls := n.mustApply(tmpl)
	checkCalls(t, calls, "enable w@.service t@.service", "reload", "start w@one.service")
}

func TestDropinOnExistingUnit(t *testing.T) {
	n := newNode(t)
	d := "- name: docker\n  dropins:\n  - name: 10-proxy.conf\n    contents: \"[Service]\\nEnvironment=HTTP_PROXY=http://a\\n\"\n"
	res, calls := n.mustApply(d)
	checkCalls(t, calls, "reload") // docker is not running: nothing to restart
	if res.Counts.Skipped != 1 {
		t.Errorf("counts %+v", res.Counts)
	}
	n.sd.SetActive("docker.service", true)
	_, calls = n.mustApply(strings.Replace(d, "http://a", "http://b", 1))
	checkCalls(t, calls, "reload", "restart docker.service")
	// Removing the hook removes the drop-in and restarts docker, but
	// neither stops nor disables a unit hostprov did not install.
	_, calls = n.mustApply("")
	checkCalls(t, calls, "reload", "restart docker.service")
	if n.exists("docker.service.d") {
		t.Error("the drop-in directory is still there")
	}
}

// TestPruneDriftHandsOff: a unit of the state whose file is not what
// hostprov wrote (an admin edited it, or the state names a file hostprov
// never wrote) is, when the spec no longer has it, left entirely alone
// without --force: its file, its enablement, its running state. With
// --force it is stopped, disabled and removed.
func TestPruneDriftHandsOff(t *testing.T) {
	const spec = "- name: a\n  exec: [/bin/true]\n- name: b\n  exec: [/bin/true]\n"
	for _, how := range []string{"edited by an admin", "a foreign file under a state entry"} {
		t.Run(how, func(t *testing.T) {
			n := newNode(t)
			n.mustApply(spec)
			edited := "[Service]\nExecStart=/usr/bin/edited\n"
			if how == "a foreign file under a state entry" {
				// The state says hostprov wrote b.service with a hash
				// that is not the file's: the file is someone else's.
				if err := os.Remove(n.unitPath("b.service")); err != nil {
					t.Fatal(err)
				}
				edited = "[Unit]\nDescription=a package's unit\n\n[Service]\nExecStart=/usr/bin/daemon\n\n[Install]\nWantedBy=multi-user.target\n"
			}
			if err := os.WriteFile(n.unitPath("b.service"), []byte(edited), 0o644); err != nil {
				t.Fatal(err)
			}
			p := n.plan("- name: a\n  exec: [/bin/true]\n")
			for _, a := range p.Actions {
				if a.Unit == "b.service" {
					t.Errorf("the plan acts on the drifted unit: %v", a)
				}
			}
			res, calls := n.mustApply("- name: a\n  exec: [/bin/true]\n")
			for _, c := range calls {
				if strings.Contains(c, "b.service") {
					t.Errorf("systemd was asked to %s", c)
				}
			}
			if got := n.read("b.service"); got != edited {
				t.Errorf("b.service changed: %q", got)
			}
			if !n.sd.Enabled("b.service") || !n.sd.Active("b.service") {
				t.Errorf("b.service: enabled %v, active %v; want both left as they were", n.sd.Enabled("b.service"), n.sd.Active("b.service"))
			}
			kept := false
			for _, e := range res.Events {
				kept = kept || e.Unit == "b.service" && e.Action == apply.EvKept
			}
			if !kept {
				t.Errorf("no event says b.service was kept: %+v", res.Events)
			}

			// --force takes it: stopped, disabled, removed.
			_, calls = n.mustApply("- name: a\n  exec: [/bin/true]\n", force)
			if got := join(calls); !strings.Contains(got, "stop b.service") || !strings.Contains(got, "disable b.service") {
				t.Errorf("with --force: %s; want b.service stopped and disabled", got)
			}
			if n.exists("b.service") {
				t.Error("with --force b.service is still there")
			}
		})
	}
}

// TestPruneSameBytesOtherFile: a file with exactly the bytes hostprov
// wrote, but not the file hostprov wrote (a copy put in its place: a
// package's, a restore), is not hostprov's to delete: the hash alone does
// not make it so. Pruning leaves it, and its unit, alone without --force.
func TestPruneSameBytesOtherFile(t *testing.T) {
	const spec = "- name: a\n  exec: [/bin/true]\n- name: b\n  exec: [/bin/true]\n"
	n := newNode(t)
	n.mustApply(spec)
	data := n.read("b.service")
	tmp := n.unitPath(".b.copy")
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, n.unitPath("b.service")); err != nil {
		t.Fatal(err)
	}
	p := n.plan("- name: a\n  exec: [/bin/true]\n")
	for _, a := range p.Actions {
		if a.Unit == "b.service" {
			t.Errorf("the plan acts on b.service: %v", a)
		}
	}
	warned := false
	for _, w := range p.Warnings {
		warned = warned || w.Unit == "b.service" && strings.Contains(w.Message, "not the file hostprov wrote")
	}
	if !warned {
		t.Errorf("no warning says b.service is not the file hostprov wrote: %v", p.Warnings)
	}
	n.mustApply("- name: a\n  exec: [/bin/true]\n")
	if !n.exists("b.service") || !n.sd.Enabled("b.service") {
		t.Errorf("b.service removed or disabled: exists %v, enabled %v", n.exists("b.service"), n.sd.Enabled("b.service"))
	}
	n.mustApply("- name: a\n  exec: [/bin/true]\n", force)
	if n.exists("b.service") {
		t.Error("with --force b.service is still there")
	}
}

// TestMaskOverAForeignFile is a conflict: systemd would refuse the mask.
func TestMaskOverAForeignFile(t *testing.T) {
	n := newNode(t)
	os.WriteFile(n.unitPath("x.service"), []byte("[Service]\nExecStart=/bin/true\n"), 0o644)
	p := n.plan("- name: x.service\n  mask: true\n")
	if len(p.Conflicts) != 1 || !strings.Contains(p.Conflicts[0].Message, "cannot mask") {
		t.Errorf("conflicts: %v", p.Conflicts)
	}
}

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
