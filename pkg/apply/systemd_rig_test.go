package apply_test

// Real-systemd proof of apply.Systemd: sdbus.Manager, the implementation
// apply uses on a node, driven against systemd booted as PID 1 in a rig.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hostprov/hostprov/internal/sdbus"
	"github.com/hostprov/hostprov/internal/systemdtest"
	"github.com/hostprov/hostprov/pkg/apply"
)

// TestSystemdLifecycle drives one unit through everything apply does with
// it, through the apply.Systemd interface, and reads each outcome back from
// systemd (over D-Bus) and from the unit directory.
func TestSystemdLifecycle(t *testing.T) {
	t.Parallel()
	ctx := rigContext(t)
	r := systemdtest.Start(t)
	var s apply.Systemd = dialRig(ctx, t, r)
	const name = "lifecycle.service"
	unit := `[Unit]
Description=apply rig test: a oneshot that records its runs

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'echo run >> /var/lib/lifecycle.runs'

[Install]
WantedBy=multi-user.target
`
	if err := r.WriteUnit(name, []byte(unit)); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(ctx); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	st := rigStatus(ctx, t, s, name)
	want := apply.UnitStatus{Name: name, LoadState: "loaded", ActiveState: "inactive", SubState: "dead",
		Result: "success", UnitFileState: "disabled",
		Exec: []apply.ExecStatus{{Argv: []string{"/bin/sh", "-c", "echo run >> /var/lib/lifecycle.runs"}}}}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("Status after reload (-want +got):\n%s", diff)
	}

	wantLink := lifecycleEnable(ctx, t, r, s, name)
	lifecycleStart(ctx, t, r, s, name)
	lifecycleEdited(ctx, t, r, s, name, unit)
	lifecycleStop(ctx, t, r, s, name, wantLink)

	// A unit apply never heard of: not an error, just not found.
	if st := rigStatus(ctx, t, s, "never-written.service"); st.LoadState != "not-found" || st.ActiveState != "inactive" {
		t.Errorf("Status of a unit without a file: %+v; want not-found, inactive", st)
	}
}

// lifecycleEnable enables name twice: one link, where systemctl enable
// makes it, then nothing. It returns the link.
func lifecycleEnable(ctx context.Context, t *testing.T, r *systemdtest.Rig, s apply.Systemd, name string) apply.LinkChange {
	changes, err := s.Enable(ctx, []string{name})
	if err != nil {
		t.Fatalf("Enable: %v", err)
	}
	wantLink := apply.LinkChange{Type: "symlink", Path: "/etc/systemd/system/multi-user.target.wants/" + name,
		Destination: "/etc/systemd/system/" + name}
	if diff := cmp.Diff([]apply.LinkChange{wantLink}, changes); diff != "" {
		t.Errorf("Enable changes (-want +got):\n%s", diff)
	}
	link := filepath.Join(r.UnitDir, "multi-user.target.wants", name)
	if target, err := os.Readlink(link); err != nil || target != wantLink.Destination {
		t.Errorf("enable link %s -> %q, %v; want -> %s", link, target, err, wantLink.Destination)
	}
	if changes, err := s.Enable(ctx, []string{name}); err != nil || len(changes) != 0 {
		t.Errorf("Enable again: %+v, %v; want no changes", changes, err)
	}
	if st := rigStatus(ctx, t, s, name); st.UnitFileState != "enabled" {
		t.Errorf("UnitFileState after Enable: %q, want enabled", st.UnitFileState)
	}
	return wantLink
}

// lifecycleStart starts name: the command runs once, the unit stays
// active (RemainAfterExit); starting it again is a no-op, restarting runs
// it again.
func lifecycleStart(ctx context.Context, t *testing.T, r *systemdtest.Rig, s apply.Systemd, name string) {
	t0 := time.Now()
	if err := s.Start(ctx, name); err != nil {
		t.Fatalf("Start: %v", err)
	}
	st := rigStatus(ctx, t, s, name)
	if st.ActiveState != "active" || st.SubState != "exited" || st.Result != "success" ||
		st.ExecMainCode != 1 || st.ExecMainStatus != 0 {
		t.Errorf("after Start: %+v; want active/exited, success, exited with 0", st)
	}
	if st.ActiveEnter.Before(t0.Add(-time.Second)) || st.ActiveEnter.After(time.Now()) {
		t.Errorf("ActiveEnter %v is not the time of the start (%v .. now)", st.ActiveEnter, t0)
	}
	if n := rigRuns(t, r); n != 1 {
		t.Errorf("runs after Start: %d, want 1", n)
	}
	// Starting an active unit is a no-op; restarting runs it again.
	if err := s.Start(ctx, name); err != nil || rigRuns(t, r) != 1 {
		t.Errorf("Start of an active oneshot: %v, runs %d; want no new run", err, rigRuns(t, r))
	}
	before := st.ActiveEnter
	if err := s.Restart(ctx, name); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	st = rigStatus(ctx, t, s, name)
	if n := rigRuns(t, r); n != 2 || st.ActiveState != "active" || !st.ActiveEnter.After(before) {
		t.Errorf("after Restart: runs %d, %s since %v (was %v); want 2 runs, active since later", n, st.ActiveState, st.ActiveEnter, before)
	}

}

// lifecycleEdited: an edited file that systemd has not re-read. (While
// the unit is active: systemd unloads an inactive unit nothing refers to,
// and loads it afresh from disk when asked about it.)
func lifecycleEdited(ctx context.Context, t *testing.T, r *systemdtest.Rig, s apply.Systemd, name, unit string) {
	if err := r.WriteUnit(name, []byte(strings.Replace(unit, "records its runs", "records its runs, edited", 1))); err != nil {
		t.Fatal(err)
	}
	if st := rigStatus(ctx, t, s, name); !st.NeedDaemonReload {
		t.Error("NeedDaemonReload false after the file changed")
	}
	if err := s.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if st := rigStatus(ctx, t, s, name); st.NeedDaemonReload {
		t.Error("NeedDaemonReload true after Reload")
	}

}

// lifecycleStop stops and disables name, whose enable link is wantLink.
func lifecycleStop(ctx context.Context, t *testing.T, r *systemdtest.Rig, s apply.Systemd, name string, wantLink apply.LinkChange) {
	link := filepath.Join(r.UnitDir, "multi-user.target.wants", name)
	if err := s.Stop(ctx, name); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	st := rigStatus(ctx, t, s, name)
	if st.ActiveState != "inactive" || st.SubState != "dead" || st.InactiveEnter.Before(st.ActiveEnter) {
		t.Errorf("after Stop: %+v; want inactive/dead, inactive since after it was active", st)
	}

	changes, err := s.Disable(ctx, []string{name})
	if err != nil {
		t.Fatalf("Disable: %v", err)
	}
	if diff := cmp.Diff([]apply.LinkChange{{Type: "unlink", Path: wantLink.Path}}, changes); diff != "" {
		t.Errorf("Disable changes (-want +got):\n%s", diff)
	}
	if _, err := os.Lstat(link); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("enable link still there after Disable: %v", err)
	}
	if st := rigStatus(ctx, t, s, name); st.UnitFileState != "disabled" {
		t.Errorf("UnitFileState after Disable: %q, want disabled", st.UnitFileState)
	}

}

// TestSystemdMask masks a unit that lives outside the administrator's
// directory (as a distribution's unit does), checks that systemd sees it
// masked and refuses to start it, and unmasks it.
func TestSystemdMask(t *testing.T) {
	t.Parallel()
	ctx := rigContext(t)
	r := systemdtest.Start(t)
	var s apply.Systemd = dialRig(ctx, t, r)
	const name = "vendor.service"
	runtimeDir := filepath.Join(r.Root, "run/systemd/system")
	if err := os.MkdirAll(runtimeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(runtimeDir, name), []byte("[Service]\nType=oneshot\nExecStart=/bin/true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	changes, err := s.Mask(ctx, []string{name})
	if err != nil {
		t.Fatalf("Mask: %v", err)
	}
	mask := apply.LinkChange{Type: "symlink", Path: "/etc/systemd/system/" + name, Destination: "/dev/null"}
	if diff := cmp.Diff([]apply.LinkChange{mask}, changes); diff != "" {
		t.Errorf("Mask changes (-want +got):\n%s", diff)
	}
	if target, err := os.Readlink(filepath.Join(r.UnitDir, name)); err != nil || target != "/dev/null" {
		t.Errorf("mask link -> %q, %v; want /dev/null", target, err)
	}
	if err := s.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if st := rigStatus(ctx, t, s, name); st.LoadState != "masked" || st.UnitFileState != "masked" {
		t.Errorf("after Mask: load %q, file %q; want masked, masked", st.LoadState, st.UnitFileState)
	}
	if err := s.Start(ctx, name); !errors.Is(err, sdbus.ErrMasked) {
		t.Errorf("Start of a masked unit: %v; want ErrMasked", err)
	}

	changes, err = s.Unmask(ctx, []string{name})
	if err != nil {
		t.Fatalf("Unmask: %v", err)
	}
	if diff := cmp.Diff([]apply.LinkChange{{Type: "unlink", Path: mask.Path}}, changes); diff != "" {
		t.Errorf("Unmask changes (-want +got):\n%s", diff)
	}
	if err := s.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if st := rigStatus(ctx, t, s, name); st.LoadState != "loaded" || st.UnitFileState != "static" {
		t.Errorf("after Unmask: load %q, file %q; want loaded, static", st.LoadState, st.UnitFileState)
	}
	if err := s.Start(ctx, name); err != nil {
		t.Errorf("Start after Unmask: %v", err)
	}
}

// rigWaitJournal waits until a unit's journal has a line.
func rigWaitJournal(ctx context.Context, t *testing.T, r *systemdtest.Rig, unit, line string) {
	t.Helper()
	for {
		out, err := r.Run(ctx, "journalctl", "--no-pager", "-o", "cat", "-u", unit)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, line) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no %q in the journal of %s: %v", line, unit, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestSystemdFailedStart checks that a start that fails says how: the
// job's result, the unit's result and exit status, and what the unit
// logged in this run (and not in an earlier one), from the journal.
func TestSystemdFailedStart(t *testing.T) {
	t.Parallel()
	ctx := rigContext(t)
	r := systemdtest.Start(t)
	var s apply.Systemd = dialRig(ctx, t, r)
	units := map[string]string{
		"false.service": "[Service]\nType=oneshot\nExecStart=/bin/false\n",
		// Fails on its second run only, saying which run it is, and
		// writes a control character, which the error must not carry.
		"exit3.service": `[Service]
Type=oneshot
ExecStart=/bin/sh -c 'if [ -e /run/exit3.ran ]; then echo second run fails on purpose; printf "tab\\tbell\\a\\n"; exit 3; fi; touch /run/exit3.ran; echo first run is fine'
`,
		// $$$$: systemd makes $$ of it, which the shell expands.
		"killed.service": "[Service]\nType=oneshot\nExecStart=/bin/sh -c 'echo about to be killed; kill -9 $$$$'\n",
		"needs-false.service": `[Unit]
Requires=false.service
After=false.service

[Service]
Type=oneshot
ExecStart=/bin/true
`,
	}
	for name, data := range units {
		if err := r.WriteUnit(name, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Reload(ctx); err != nil {
		t.Fatal(err)
	}

	jobError := func(err error, op, unit string) *sdbus.JobError {
		t.Helper()
		var je *sdbus.JobError
		if !errors.As(err, &je) || !errors.Is(err, sdbus.ErrJobFailed) {
			t.Fatalf("%s %s: %v (%T); want a *sdbus.JobError", op, unit, err, err)
		}
		t.Logf("%s %s: %v", op, unit, err)
		if je.Op != op || je.Unit != unit {
			t.Errorf("JobError names %s %s, want %s %s", je.Op, je.Unit, op, unit)
		}
		return je
	}

	je := jobError(s.Start(ctx, "false.service"), "start", "false.service")
	if je.JobResult != "failed" || je.ActiveState != "failed" || je.Result != "exit-code" || je.ExecMainCode != 1 || je.ExecMainStatus != 1 {
		t.Errorf("false.service: %+v; want job failed, unit failed, exit-code, status 1", je)
	}
	if !strings.Contains(strings.Join(je.Journal, "\n"), "false.service: Failed with result 'exit-code'.") {
		t.Errorf("false.service journal %q; want systemd's line about the failure", je.Journal)
	}
	st := rigStatus(ctx, t, s, "false.service")
	if st.ActiveState != "failed" || st.Result != "exit-code" || st.ExecMainStatus != 1 || st.InactiveEnter.IsZero() {
		t.Errorf("Status of false.service: %+v; want failed, exit-code, status 1, a time it failed", st)
	}
	if !strings.Contains(strings.Join(st.Journal, "\n"), "false.service: Failed with result 'exit-code'.") {
		t.Errorf("Status of false.service: journal %q; want the lines of its failed run", st.Journal)
	}

	if err := s.Start(ctx, "exit3.service"); err != nil {
		t.Fatalf("first run of exit3.service: %v", err)
	}
	// As between two applies: the first run's output is in the journal
	// before the second run is asked for. (journald may receive a run's
	// last line a moment after its job ended.)
	rigWaitJournal(ctx, t, r, "exit3.service", "first run is fine")
	je = jobError(s.Restart(ctx, "exit3.service"), "restart", "exit3.service")
	if je.Result != "exit-code" || je.ExecMainStatus != 3 {
		t.Errorf("exit3.service: result %q status %d; want exit-code 3", je.Result, je.ExecMainStatus)
	}
	msg := je.Error()
	for _, want := range []string{"restart exit3.service: the job failed", `result "exit-code"`, "exited with status 3", "second run fails on purpose", "tab\tbell\uFFFD"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "first run is fine") {
		t.Errorf("message %q quotes an earlier run", msg)
	}

	je = jobError(s.Start(ctx, "killed.service"), "start", "killed.service")
	if je.Result != "signal" || je.ExecMainCode != 2 || je.ExecMainStatus != 9 || !strings.Contains(je.Error(), "killed by signal 9") {
		t.Errorf("killed.service: %v; want result signal, killed by signal 9", je)
	}

	je = jobError(s.Start(ctx, "needs-false.service"), "start", "needs-false.service")
	if je.JobResult != "dependency" || !strings.Contains(je.Error(), "a unit it requires failed") {
		t.Errorf("needs-false.service: %v; want job result dependency", je)
	}
}
