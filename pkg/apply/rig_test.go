package apply_test

// Real-systemd proof of apply.Systemd: sdbus.Manager, the implementation
// apply uses on a node, driven against systemd booted as PID 1 in a rig.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hostprov/hostprov/internal/rig"
	"github.com/hostprov/hostprov/internal/sdbus"
	"github.com/hostprov/hostprov/internal/testbin"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
)

func rigContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// dialRig connects an sdbus.Manager to the rig's systemd, reading the
// journal of the rig (not of the host) for failed jobs.
func dialRig(ctx context.Context, t testing.TB, r *rig.Rig) *sdbus.Manager {
	t.Helper()
	m, err := rigManager(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// rigManager is dialRig for a caller that closes the Manager itself.
func rigManager(ctx context.Context, r *rig.Rig) (*sdbus.Manager, error) {
	m, err := sdbus.Dial(ctx, r.Socket)
	if err != nil {
		return nil, err
	}
	m.RunJournalctl = func(ctx context.Context, args ...string) ([]byte, error) {
		out, err := r.Run(ctx, append([]string{"journalctl"}, args...)...)
		return []byte(out), err
	}
	return m, nil
}

func rigStatus(ctx context.Context, t *testing.T, s apply.Systemd, name string) apply.UnitStatus {
	t.Helper()
	st, err := s.Status(ctx, name)
	if err != nil {
		t.Fatalf("Status(%s): %v", name, err)
	}
	return st
}

// rigRuns counts the lines the lifecycle unit appended to its run log, in
// the rig's /var/lib.
func rigRuns(t *testing.T, r *rig.Rig) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(r.Root, "var/lib/lifecycle.runs"))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

// TestSystemdLifecycle drives one unit through everything apply does with
// it, through the apply.Systemd interface, and reads each outcome back from
// systemd (over D-Bus) and from the unit directory.
func TestSystemdLifecycle(t *testing.T) {
	t.Parallel()
	ctx := rigContext(t)
	r := rig.Start(t)
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

	// Enable: one link, where systemctl enable makes it; again: nothing.
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

	// Start: the command runs once, the unit stays active (RemainAfterExit).
	t0 := time.Now()
	if err := s.Start(ctx, name); err != nil {
		t.Fatalf("Start: %v", err)
	}
	st = rigStatus(ctx, t, s, name)
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

	// An edited file that systemd has not re-read. (While the unit is
	// active: systemd unloads an inactive unit nothing refers to, and
	// loads it afresh from disk when asked about it.)
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

	if err := s.Stop(ctx, name); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	st = rigStatus(ctx, t, s, name)
	if st.ActiveState != "inactive" || st.SubState != "dead" || st.InactiveEnter.Before(st.ActiveEnter) {
		t.Errorf("after Stop: %+v; want inactive/dead, inactive since after it was active", st)
	}

	changes, err = s.Disable(ctx, []string{name})
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

	// A unit apply never heard of: not an error, just not found.
	if st := rigStatus(ctx, t, s, "never-written.service"); st.LoadState != "not-found" || st.ActiveState != "inactive" {
		t.Errorf("Status of a unit without a file: %+v; want not-found, inactive", st)
	}
}

// TestSystemdMask masks a unit that lives outside the administrator's
// directory (as a distribution's unit does), checks that systemd sees it
// masked and refuses to start it, and unmasks it.
func TestSystemdMask(t *testing.T) {
	t.Parallel()
	ctx := rigContext(t)
	r := rig.Start(t)
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
func rigWaitJournal(ctx context.Context, t *testing.T, r *rig.Rig, unit, line string) {
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
	r := rig.Start(t)
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

// rigNode is a rig driven by apply as hostprov apply drives a node: the
// rig's root as Options.Root (so paths are the node's), its systemd as the
// Systemd.
type rigNode struct {
	t    testing.TB
	r    *rig.Rig
	m    *sdbus.Manager
	opts apply.Options
}

func newRigNode(ctx context.Context, t testing.TB) *rigNode {
	t.Helper()
	r := rig.Start(t)
	n := &rigNode{t: t, r: r, m: dialRig(ctx, t, r), opts: apply.Options{Root: r.Root}}
	if err := apply.PrepareDirs(n.opts); err != nil {
		t.Fatal(err)
	}
	return n
}

// rigRender renders a spec as the CLI does: its units and its hooks' names.
func rigRender(t testing.TB, specYAML string) ([]compile.Unit, []string) {
	t.Helper()
	us, diags := compile.Build("hostprov.yaml", []byte(specYAML))
	if diags.HasErrors(false) {
		t.Fatalf("spec: %v", diags)
	}
	sp, _ := hooks.Parse("hostprov.yaml", []byte(specYAML))
	var names []string
	for _, h := range sp.Hooks {
		names = append(names, h.Name)
	}
	return us, names
}

// plan plans a spec against the node's state and unit directory.
func (n *rigNode) plan(ctx context.Context, specYAML string) *apply.Plan {
	n.t.Helper()
	us, names := rigRender(n.t, specYAML)
	st, err := apply.LoadState(apply.StatePath(n.opts.StateDirPath()))
	if err != nil {
		n.t.Fatal(err)
	}
	opts := n.opts
	opts.HookNames = names
	p, err := apply.NewPlan(ctx, us, st, opts)
	if err != nil {
		n.t.Fatal(err)
	}
	return p
}

// apply plans and executes a spec, and returns the plan and the result;
// an error of Execute (a failed start) is returned, not fatal.
func (n *rigNode) apply(ctx context.Context, specYAML string) (*apply.Plan, *apply.Result, error) {
	n.t.Helper()
	p := n.plan(ctx, specYAML)
	res, err := apply.Execute(ctx, p, n.m, nil)
	if res == nil {
		n.t.Fatalf("Execute returned no result: %v", err)
	}
	return p, res, err
}

// mustApply is apply for a spec whose every step must succeed.
func (n *rigNode) mustApply(ctx context.Context, specYAML string) (*apply.Plan, *apply.Result) {
	n.t.Helper()
	p, res, err := n.apply(ctx, specYAML)
	if err != nil {
		n.t.Fatalf("apply: %v\nevents:\n%s", err, eventsText(res))
	}
	return p, res
}

func eventsText(res *apply.Result) string {
	var b strings.Builder
	for _, e := range res.Events {
		b.WriteString("  " + e.Text())
		if e.Error != "" {
			b.WriteString(": " + e.Error)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// installTools puts executables into the rig's /usr/local/bin, which units
// find first on systemd's default PATH. The rig's /usr is the host's,
// read-only; its /usr/local is its own. They are written into the rig's
// /tmp from here and installed from inside, where /usr/local is mounted.
func (n *rigNode) installTools(ctx context.Context, tools map[string]string) {
	n.t.Helper()
	dir := filepath.Join(n.r.Root, "tmp/tools")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		n.t.Fatal(err)
	}
	for name, script := range tools {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			n.t.Fatal(err)
		}
	}
	if _, err := n.r.Run(ctx, "sh", "-c", "mkdir -p /usr/local/bin && cp -p /tmp/tools/* /usr/local/bin/"); err != nil {
		n.t.Fatal(err)
	}
}

// readExample reads an example spec and replaces commands in it (old, new,
// old, new, ...), each of which must be there: the units stay as the
// example makes them, with harmless commands.
func readExample(t testing.TB, name string, replace ...string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("../../examples", name, "hostprov.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for i := 0; i+1 < len(replace); i += 2 {
		if !strings.Contains(s, replace[i]) {
			t.Fatalf("examples/%s no longer has %q: update the test's replacements", name, replace[i])
		}
		s = strings.ReplaceAll(s, replace[i], replace[i+1])
	}
	return s
}

// checkUnitsApplied checks every unit of a spec against systemd: loaded;
// enabled when it has an [Install] section; a oneshot that remains after
// exit active with result success; the file on disk the rendered bytes.
func (n *rigNode) checkUnitsApplied(ctx context.Context, t *testing.T, specYAML string, except ...string) {
	t.Helper()
	us, _ := rigRender(t, specYAML)
	for _, u := range us {
		if slices.Contains(except, u.Name) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(n.r.UnitDir, u.Name))
		if err != nil || !bytes.Equal(data, u.Contents) {
			t.Errorf("%s on disk is not what the spec renders (%v)", u.Name, err)
		}
		st := rigStatus(ctx, t, n.m, u.Name)
		if st.LoadState != "loaded" || st.NeedDaemonReload {
			t.Errorf("%s: load state %q, needs reload %v; want loaded, no", u.Name, st.LoadState, st.NeedDaemonReload)
		}
		text := string(u.Contents)
		if strings.Contains(text, "\n[Install]\n") && st.UnitFileState != "enabled" {
			t.Errorf("%s: unit file state %q, want enabled", u.Name, st.UnitFileState)
		}
		if strings.Contains(text, "\nType=oneshot\n") && strings.Contains(text, "\nRemainAfterExit=yes\n") &&
			(st.ActiveState != "active" || st.Result != "success") {
			t.Errorf("%s: %s, result %q; want active, success", u.Name, st.ActiveState, st.Result)
		}
	}
}

// TestRigApplyISCSIExample applies examples/iscsi to a real systemd, with
// fakes of the initiator tools (so that the detection finds them
// installed and nothing is installed from the network) and a stand-in
// iscsid.service in the unit directory, which hostprov does not own and
// must leave byte for byte as it was.
func TestRigApplyISCSIExample(t *testing.T) {
	t.Parallel()
	ctx := rigContext(t)
	n := newRigNode(ctx, t)
	iscsid := n.prepareISCSI(ctx, map[string]string{
		"iscsiadm": "#!/bin/sh\necho 'iscsiadm (hostprov rig fake)'\n",
	})
	if err := n.m.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	spec := readExample(t, "iscsi")
	p, res := n.mustApply(ctx, spec)
	t.Logf("%s\nevents:\n%s", p.Summary(), eventsText(res))
	if res.Counts.Reloads != 1 || res.Counts.Failed != 0 {
		t.Errorf("counts %+v; want one reload, no failure", res.Counts)
	}
	n.checkUnitsApplied(ctx, t, spec)

	name, err := os.ReadFile(filepath.Join(n.r.Root, "etc/iscsi/initiatorname.iscsi"))
	if err != nil || string(name) != "InitiatorName=iqn.2004-10.com.example:hostprov-rig\n" {
		t.Errorf("initiator name %q, %v; want the fake iscsi-iname's", name, err)
	}
	// The hook enables and starts iscsid with --no-block: wait for it.
	for st := rigStatus(ctx, t, n.m, "iscsid.service"); st.ActiveState != "active" || st.UnitFileState != "enabled"; st = rigStatus(ctx, t, n.m, "iscsid.service") {
		if ctx.Err() != nil {
			t.Fatalf("iscsid.service: %+v; want enabled and active", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if data, err := os.ReadFile(filepath.Join(n.r.UnitDir, "iscsid.service")); err != nil || string(data) != iscsid {
		t.Errorf("the foreign iscsid.service changed: %q, %v", data, err)
	}

	// Applied again: nothing to do, nothing done.
	p, res = n.mustApply(ctx, spec)
	if p.HasChanges() || res.Counts.Writes != 0 || res.Counts.Reloads != 0 || res.Counts.Starts+res.Counts.Restarts != 0 {
		t.Errorf("re-apply: %s, counts %+v; want no changes, no writes, reloads, starts", p.Summary(), res.Counts)
	}
}

// TestRigApplySwapExample applies examples/swap with harmless stand-ins
// for fallocate and mkswap. The swap unit itself cannot be activated in a
// rig (systemd supports no swap in a container, which also keeps the
// host's swap safe), so its start must fail with a clear error while the
// rest is in place: the file made, both units enabled.
func TestRigApplySwapExample(t *testing.T) {
	t.Parallel()
	ctx := rigContext(t)
	n := newRigNode(ctx, t)
	n.installTools(ctx, map[string]string{
		"fallocate": "#!/bin/sh\n# fallocate -l SIZE FILE: a small file instead\necho \"fake $2 swap\" > \"$3\"\n",
		"mkswap":    "#!/bin/sh\necho \"mkswap (hostprov rig fake) $1\"\n",
	})
	spec := readExample(t, "swap", "/usr/bin/fallocate", "/usr/local/bin/fallocate", "/sbin/mkswap", "/usr/local/bin/mkswap")
	p, res, err := n.apply(ctx, spec)
	t.Logf("%s\nevents:\n%s\nerror: %v", p.Summary(), eventsText(res), err)
	if data, err := os.ReadFile(filepath.Join(n.r.Root, "swap1")); err != nil || string(data) != "fake 1G swap\n" {
		t.Errorf("/swap1: %q, %v; want the fake fallocate's file", data, err)
	}
	if _, err := os.Stat(filepath.Join(n.r.Root, "swap1.tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("/swap1.tmp is left: %v", err)
	}
	st := rigStatus(ctx, t, n.m, "create-swapfile.service")
	if st.Result != "success" || st.ExecMainCode != 1 || st.ExecMainStatus != 0 || st.UnitFileState != "enabled" {
		t.Errorf("create-swapfile.service: %+v; want enabled, ran with success", st)
	}
	for _, link := range []string{"swap.target.wants/swap1.swap", "swap1.swap.wants/create-swapfile.service"} {
		if _, err := os.Readlink(filepath.Join(n.r.UnitDir, link)); err != nil {
			t.Errorf("enable link %s: %v", link, err)
		}
	}
	var failed *apply.Event
	for i, e := range res.Events {
		if e.Action == apply.EvFailed {
			failed = &res.Events[i]
		}
	}
	if err == nil || res.Counts.Failed != 1 || failed == nil || failed.Unit != "swap1.swap" {
		t.Fatalf("error %v, counts %+v; want exactly the start of swap1.swap to fail", err, res.Counts)
	}
	if !strings.Contains(failed.Error, "start swap1.swap: systemd does not support this unit's type here") {
		t.Errorf("the failure says %q; want it to say that swap1.swap is not supported here", failed.Error)
	}
}

// lifeSpec is a spec of two oneshots that log each run to /var/lib/runs
// and a long-running service; version changes beta's command, and gamma
// is left out when withGamma is false.
func lifeSpec(version string, withGamma bool) string {
	s := `apiVersion: hostprov/v1alpha1
kind: Hooks
hooks:
- name: alpha
  description: rig test, a oneshot that stays active
  type: oneshot
  remainAfterExit: true
  exec: [/bin/sh, -c, "echo alpha >> /var/lib/runs"]
- name: beta
  description: rig test, a oneshot that changes
  type: oneshot
  remainAfterExit: true
  exec: [/bin/sh, -c, "echo beta ` + version + ` >> /var/lib/runs"]
`
	if withGamma {
		s += `- name: gamma
  description: rig test, a service that runs until stopped
  exec: [/bin/sleep, infinity]
`
	}
	return s
}

// TestRigReapplyChangeRemove proves against a real systemd what apply
// promises over time: a re-apply of the same spec writes, reloads and
// restarts nothing; a change to one unit is one write, one reload and one
// restart of that unit only; a hook taken out of the spec is stopped,
// disabled and deleted; and a unit hostprov did not write, enabled and
// running in the same directory, is never touched.
func TestRigReapplyChangeRemove(t *testing.T) {
	t.Parallel()
	ctx := rigContext(t)
	n := newRigNode(ctx, t)
	runsFile := filepath.Join(n.r.Root, "var/lib/runs")
	readRuns := func() string {
		data, _ := os.ReadFile(runsFile)
		return string(data)
	}

	foreign := "[Unit]\nDescription=not hostprov's\n\n[Service]\nExecStart=/bin/sleep infinity\n\n[Install]\nWantedBy=multi-user.target\n"
	if err := n.r.WriteUnit("foreign.service", []byte(foreign)); err != nil {
		t.Fatal(err)
	}
	if _, err := n.r.Run(ctx, "systemctl", "daemon-reload"); err != nil {
		t.Fatal(err)
	}
	if _, err := n.r.Run(ctx, "systemctl", "enable", "--now", "foreign.service"); err != nil {
		t.Fatal(err)
	}
	foreignBefore := rigStatus(ctx, t, n.m, "foreign.service")
	checkForeign := func(when string) {
		t.Helper()
		if data, err := os.ReadFile(filepath.Join(n.r.UnitDir, "foreign.service")); err != nil || string(data) != foreign {
			t.Errorf("%s: foreign.service changed: %q, %v", when, data, err)
		}
		if target, err := os.Readlink(filepath.Join(n.r.UnitDir, "multi-user.target.wants/foreign.service")); err != nil || target != "/etc/systemd/system/foreign.service" {
			t.Errorf("%s: foreign.service's enable link: %q, %v", when, target, err)
		}
		if st := rigStatus(ctx, t, n.m, "foreign.service"); st.ActiveState != "active" || !st.ActiveEnter.Equal(foreignBefore.ActiveEnter) {
			t.Errorf("%s: foreign.service %s since %v; want active since %v, never restarted", when, st.ActiveState, st.ActiveEnter, foreignBefore.ActiveEnter)
		}
	}

	// First apply: three units written, one reload, three started.
	v1 := lifeSpec("v1", true)
	p, res := n.mustApply(ctx, v1)
	if c := res.Counts; c.Writes != 3 || c.Reloads != 1 || c.Enables != 3 || c.Starts != 3 || c.Restarts != 0 {
		t.Errorf("first apply: counts %+v; want 3 writes, 1 reload, 3 enables, 3 starts", c)
	}
	n.checkUnitsApplied(ctx, t, v1)
	if st := rigStatus(ctx, t, n.m, "gamma.service"); st.ActiveState != "active" || st.SubState != "running" {
		t.Errorf("gamma.service %s/%s, want active/running", st.ActiveState, st.SubState)
	}
	if got := readRuns(); got != "alpha\nbeta v1\n" && got != "beta v1\nalpha\n" {
		t.Errorf("runs after the first apply: %q", got)
	}
	checkForeign("first apply")
	before := map[string]apply.UnitStatus{}
	for _, u := range []string{"alpha.service", "beta.service", "gamma.service"} {
		before[u] = rigStatus(ctx, t, n.m, u)
	}

	// Re-apply: nothing.
	p, res = n.mustApply(ctx, v1)
	if c := res.Counts; p.HasChanges() || c.Writes != 0 || c.Reloads != 0 || c.Starts != 0 || c.Restarts != 0 || c.Enables != 0 || c.Stops != 0 || c.Removes != 0 {
		t.Errorf("re-apply: %s, counts %+v; want no changes and no writes, reloads, enables, starts, restarts", p.Summary(), c)
	}
	if c := res.Counts; c.Unchanged != 3 {
		t.Errorf("re-apply: %d files unchanged, want 3", c.Unchanged)
	}
	for u, b := range before {
		if st := rigStatus(ctx, t, n.m, u); !st.ActiveEnter.Equal(b.ActiveEnter) {
			t.Errorf("re-apply restarted %s (active since %v, was %v)", u, st.ActiveEnter, b.ActiveEnter)
		}
	}

	// One unit changed: one write, one reload, one restart, of it alone.
	v2 := lifeSpec("v2", true)
	p, res = n.mustApply(ctx, v2)
	if c := res.Counts; p.Summary() != "Plan: 0 to add, 1 to change, 0 to remove." || c.Writes != 1 || c.Reloads != 1 || c.Restarts != 1 || c.Starts != 0 || c.Enables != 0 {
		t.Errorf("change: %s, counts %+v; want 1 to change, 1 write, 1 reload, 1 restart", p.Summary(), c)
	}
	for _, e := range res.Events {
		if e.Action == apply.EvRestarted && e.Unit != "beta.service" {
			t.Errorf("restarted %s, which did not change", e.Unit)
		}
	}
	if got := readRuns(); !strings.HasSuffix(got, "beta v2\n") || strings.Count(got, "alpha") != 1 {
		t.Errorf("runs after the change: %q; want beta v2 run once more, alpha not again", got)
	}
	n.checkUnitsApplied(ctx, t, v2)
	for _, u := range []string{"alpha.service", "gamma.service"} {
		if st := rigStatus(ctx, t, n.m, u); !st.ActiveEnter.Equal(before[u].ActiveEnter) {
			t.Errorf("changing beta restarted %s", u)
		}
	}

	// gamma taken out: stopped, disabled, deleted, one reload.
	v3 := lifeSpec("v2", false)
	p, res = n.mustApply(ctx, v3)
	if c := res.Counts; p.Summary() != "Plan: 0 to add, 0 to change, 1 to remove." || c.Stops != 1 || c.Disables != 1 || c.Removes != 1 || c.Reloads != 1 || c.Writes != 0 {
		t.Errorf("remove: %s, counts %+v; want 1 stop, 1 disable, 1 file removed, 1 reload", p.Summary(), c)
	}
	for _, f := range []string{"gamma.service", "multi-user.target.wants/gamma.service"} {
		if _, err := os.Lstat(filepath.Join(n.r.UnitDir, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there after gamma left the spec: %v", f, err)
		}
	}
	if st := rigStatus(ctx, t, n.m, "gamma.service"); st.LoadState != "not-found" || st.ActiveState != "inactive" {
		t.Errorf("gamma.service after removal: %s/%s; want not-found, inactive", st.LoadState, st.ActiveState)
	}
	n.checkUnitsApplied(ctx, t, v3)
	checkForeign("after all applies")
	if p := n.plan(ctx, v3); p.HasChanges() {
		t.Errorf("plan after the last apply: %s", p.Summary())
	}
}

// newRigNodeWithHostprov is newRigNode with the hostprov binary, built with
// the build tags, installed in the rig as /opt/hostprov.
func newRigNodeWithHostprov(ctx context.Context, t testing.TB, tags ...string) *rigNode {
	t.Helper()
	bin := testbin.Hostprov(t, tags...)
	n := newRigNode(ctx, t)
	if err := n.r.Install(bin, "/opt/hostprov"); err != nil {
		t.Fatal(err)
	}
	return n
}

// crashSpec is one side of the crash test's back and forth: ten oneshots
// and a long-running service; side B drops four of A's oneshots, changes
// the other six and the service, and adds four.
func crashSpec(side string) string {
	var b strings.Builder
	// One spec set, whose file is A.yaml or B.yaml: two versions of one spec.
	b.WriteString("apiVersion: hostprov/v1alpha1\nkind: Hooks\nmetadata:\n  name: crash\nhooks:\n")
	first := 0
	if side == "B" {
		first = 4
	}
	for i := first; i < first+10; i++ {
		fmt.Fprintf(&b, `- name: crash-%02d
  description: crash test oneshot %02d, side %s
  type: oneshot
  remainAfterExit: true
  exec: [/bin/sh, -c, "echo %s %02d >> /var/lib/crash-runs"]
`, i, i, side, side, i)
	}
	fmt.Fprintf(&b, `- name: crash-daemon
  description: crash test service, side %s
  exec: [/bin/sleep, infinity]
`, side)
	return b.String()
}

// killedApply runs /opt/hostprov apply on side's spec in the rig and kills
// it with SIGKILL after delay, unless it ended before. It reports the
// apply's error and whether it was killed.
//
// The kill is sent inside the rig to the process's own pid, not by ending
// Run's context: that kills nsenter too, and hostprov, orphaned in the
// rig's PID namespace with its reaper outside, stays a zombie that holds
// up the rig's power-off.
func (n *rigNode) killedApply(ctx context.Context, side string, delay time.Duration) (error, bool) {
	n.t.Helper()
	pidFile := filepath.Join(n.r.Root, "run/crash-apply.pid")
	os.Remove(pidFile)
	done := make(chan error, 1)
	go func() {
		_, err := n.r.Run(ctx, "sh", "-c", `echo $$ > /run/crash-apply.pid.tmp && mv /run/crash-apply.pid.tmp /run/crash-apply.pid && exec /opt/hostprov apply -f "$1"`,
			"sh", "/root/"+side+".yaml")
		done <- err
	}()
	select {
	case err := <-done:
		return err, false
	case <-time.After(delay):
	}
	var pid []byte
	for {
		var err error
		if pid, err = os.ReadFile(pidFile); err == nil {
			break
		}
		select {
		case err := <-done:
			return err, false
		case <-time.After(time.Millisecond):
		}
	}
	// It may have ended meanwhile: then kill fails, and the apply's own
	// result says so.
	n.r.Run(ctx, "kill", "-KILL", strings.TrimSpace(string(pid)))
	err := <-done
	return err, err != nil && strings.Contains(err.Error(), "signal: killed")
}

// TestRigCrash runs hostprov apply (the real binary, inside the rig, as on
// a node) and kills it with SIGKILL after a random delay, dozens of times,
// going back and forth between two specs that add, change and remove
// units. After every kill each unit file must be whole, its old or its new
// bytes, and the state file readable; the next apply must then converge:
// it succeeds, plan says "No changes.", and systemd runs exactly the units
// of the spec.
func TestRigCrash(t *testing.T) {
	t.Parallel()
	ctx := rigContext(t)
	n := newRigNodeWithHostprov(ctx, t)
	// Every version of every unit file either spec renders.
	versions := map[string][][]byte{}
	specs := map[string]string{}
	for _, side := range []string{"A", "B"} {
		specs[side] = crashSpec(side)
		if err := os.WriteFile(filepath.Join(n.r.Root, "root", side+".yaml"), []byte(specs[side]), 0o644); err != nil {
			t.Fatal(err)
		}
		us, _ := rigRender(t, specs[side])
		for _, u := range us {
			versions[u.Name] = append(versions[u.Name], u.Contents)
		}
	}
	hostprov := func(ctx context.Context, args ...string) (string, error) {
		return n.r.Run(ctx, append([]string{"/opt/hostprov"}, args...)...)
	}
	// converge applies side to the end and checks that nothing is left
	// to do and that systemd agrees.
	converge := func(side string) time.Duration {
		t.Helper()
		t0 := time.Now()
		if out, err := hostprov(ctx, "apply", "-f", "/root/"+side+".yaml"); err != nil {
			t.Fatalf("apply %s after a kill: %v\n%s", side, err, out)
		}
		d := time.Since(t0)
		if out, err := hostprov(ctx, "plan", "-f", "/root/"+side+".yaml", "--detailed-exitcode"); err != nil || !strings.HasSuffix(strings.TrimSpace(out), "No changes.") {
			t.Fatalf("plan %s after the converging apply: %v\n%s", side, err, out)
		}
		n.checkUnitsApplied(ctx, t, specs[side])
		us, _ := rigRender(t, specs[side])
		for name := range versions {
			if !slices.ContainsFunc(us, func(u compile.Unit) bool { return u.Name == name }) {
				if st := rigStatus(ctx, t, n.m, name); st.LoadState != "not-found" || st.ActiveState != "inactive" {
					t.Errorf("side %s: %s, not in the spec, is %s/%s", side, name, st.LoadState, st.ActiveState)
				}
			}
		}
		return d
	}
	// checkFiles checks that every unit file is whole, and collects the
	// temporary files kills left behind.
	temps := map[string]bool{}
	checkFiles := func(when string) {
		t.Helper()
		entries, err := os.ReadDir(n.r.UnitDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !e.Type().IsRegular() {
				continue // .wants directories, mask links
			}
			if strings.HasPrefix(e.Name(), ".") {
				temps[e.Name()] = true
				continue
			}
			data, err := os.ReadFile(filepath.Join(n.r.UnitDir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(versions[e.Name()], func(v []byte) bool { return bytes.Equal(v, data) }) {
				t.Errorf("%s: %s is neither its old nor its new content:\n%s", when, e.Name(), data)
			}
		}
		if _, err := apply.LoadState(apply.StatePath(n.opts.StateDirPath())); err != nil {
			t.Errorf("%s: the state file: %v", when, err)
		}
	}

	full := converge("A")
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("an uncut apply of A takes %v; kill delays are drawn below that (seed %d)", full, seed)
	// Kill until 30 applies were cut (at most four times as many rounds):
	// a delay that turns out too long for a fast run shortens the next
	// ones, so the count does not depend on luck or on the machine's
	// load. make crash asks for more (HOSTPROV_CRASH_KILLS).
	wantKills := 30
	if v, err := strconv.Atoi(os.Getenv("HOSTPROV_CRASH_KILLS")); err == nil && v > 0 {
		wantKills = v
	}
	maxRounds := 4 * wantKills
	killed, rounds := 0, 0
	progress := map[int]int{} // actions logged before the kill -> kills
	side := "A"
	for i := 0; killed < wantKills && i < maxRounds; i++ {
		rounds++
		if side == "A" {
			side = "B"
		} else {
			side = "A"
		}
		delay := time.Duration(rng.Int64N(int64(full)))
		err, cut := n.killedApply(ctx, side, delay)
		if cut {
			killed++
			// The action log goes to stderr, which Run's error carries.
			done := strings.Count(err.Error(), "hostprov: ")
			progress[done]++
		} else if err != nil {
			t.Fatalf("round %d: apply %s failed without being killed: %v", i, side, err)
		} else {
			full = full * 9 / 10
		}
		checkFiles(fmt.Sprintf("round %d, %s killed after %v", i, side, delay))
		if t.Failed() {
			t.FailNow()
		}
		converge(side)
	}
	t.Logf("%d of %d applies killed; actions logged before the kill -> kills: %v", killed, rounds, progress)
	names := slices.Sorted(maps.Keys(temps))
	t.Logf("temporary files kills left in the unit directory before the next apply: %d, such as %v", len(temps), names[:min(len(names), 5)])
	// The converging applies removed them.
	if left, _ := filepath.Glob(filepath.Join(n.r.UnitDir, ".*.tmp-*")); len(left) > 0 {
		t.Errorf("temporary files left after the converging apply: %v", left)
	}
	if killed < wantKills || len(progress) < 3 {
		t.Errorf("only %d kills, at %d different points: the test did not cut applies at enough places", killed, len(progress))
	}
}

// TestRigStartsInParallelInOrder: the starts of one apply run as at boot.
// Two independent oneshots overlap (each has started before either ends),
// and one ordered After= another, earlier in the spec, starts only once that
// one has ended. Each unit appends its start and end to one file; the test
// checks their order, not how long anything took.
func TestRigStartsInParallelInOrder(t *testing.T) {
	t.Parallel()
	ctx := rigContext(t)
	n := newRigNode(ctx, t)
	hook := func(name, after string) string {
		h := fmt.Sprintf(`- name: %[1]s
  type: oneshot
  remainAfterExit: true
  exec: [/bin/sh, -c, "echo %[1]s-start >> /var/lib/order; sleep 1; echo %[1]s-end >> /var/lib/order"]
`, name)
		if after != "" {
			h += "  after: [" + after + "]\n"
		}
		return h
	}
	spec := "apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n" +
		hook("first", "") + hook("par-a", "") + hook("par-b", "") + hook("second", "first.service")
	_, res := n.mustApply(ctx, spec)
	if res.Counts.Starts != 4 {
		t.Fatalf("counts %+v; want 4 starts", res.Counts)
	}
	data, err := os.ReadFile(filepath.Join(n.r.Root, "var/lib/order"))
	if err != nil {
		t.Fatal(err)
	}
	at := map[string]int{}
	for i, l := range strings.Fields(string(data)) {
		at[l] = i
	}
	if len(at) != 8 {
		t.Fatalf("order file:\n%s", data)
	}
	if at["par-a-start"] > at["par-b-end"] || at["par-b-start"] > at["par-a-end"] {
		t.Errorf("par-a and par-b ran one after the other, not in parallel:\n%s", data)
	}
	if at["second-start"] < at["first-end"] {
		t.Errorf("second (After=first.service) started before first ended:\n%s", data)
	}
	// Logged in the spec's order all the same.
	var started []string
	for _, ev := range res.Events {
		if ev.Action == apply.EvStarted {
			started = append(started, ev.Unit)
		}
	}
	if got := strings.Join(started, " "); got != "first.service par-a.service par-b.service second.service" {
		t.Errorf("started events: %s", got)
	}
}
