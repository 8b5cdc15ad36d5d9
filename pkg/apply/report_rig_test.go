package apply_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/pkg/apply"
)

// prepareISCSI readies a rig node for the iSCSI example: an os-release for
// its detection (the host's: the rig's /usr is the host's), a fake
// iscsi-iname and the given tools on PATH, and a stand-in iscsid.service
// that hostprov does not own. It returns the stand-in's contents.
func (n *rigNode) prepareISCSI(ctx context.Context, tools map[string]string) string {
	n.t.Helper()
	if err := os.Symlink("../usr/lib/os-release", filepath.Join(n.r.Root, "etc/os-release")); err != nil {
		n.t.Fatal(err)
	}
	tools["iscsi-iname"] = "#!/bin/sh\necho iqn.2004-10.com.example:hostprov-rig\n"
	n.installTools(ctx, tools)
	iscsid := "[Unit]\nDescription=stand-in for the iSCSI daemon\n\n[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/true\n\n[Install]\nWantedBy=multi-user.target\n"
	if err := n.r.WriteUnit("iscsid.service", []byte(iscsid)); err != nil {
		n.t.Fatal(err)
	}
	return iscsid
}

// report returns status's report of one unit of the node.
func (n *rigNode) report(t *testing.T, unit string) apply.UnitReport {
	t.Helper()
	st, err := apply.LoadState(apply.StatePath(n.opts.StateDirPath()))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := apply.Report(rigContext(t), n.m, st, n.opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Unit == unit {
			return r
		}
	}
	t.Fatalf("status has no %s: %+v", unit, rs)
	return apply.UnitReport{}
}

// TestRigCommandHookSteps runs a command hook of three steps whose second
// fails in a real systemd, and reads back what status says of each step:
// the first succeeded, the second failed with its exit code and left its
// output in the journal, the third never ran.
func TestRigCommandHookSteps(t *testing.T) {
	t.Parallel()
	ctx := rigContext(t)
	n := newRigNode(ctx, t)
	spec := `apiVersion: hostprov/v1alpha1
kind: Hooks
hooks:
- name: three-steps
  when: Always
  steps:
  - name: first
    run: [/bin/true]
  - name: second
    sh: |
      echo "second step goes wrong" >&2
      exit 3
  - name: third
    run: [/bin/touch, /var/lib/third-ran]
`
	_, res, err := n.apply(ctx, spec)
	if err == nil {
		t.Fatalf("apply of a failing command hook succeeded; events:\n%s", eventsText(res))
	}
	r := n.report(t, "three-steps.service")
	if r.Phase != apply.PhaseFailed {
		t.Errorf("phase %q, want %q", r.Phase, apply.PhaseFailed)
	}
	if len(r.Steps) != 3 {
		t.Fatalf("steps %+v, want 3", r.Steps)
	}
	first, second, third := r.Steps[0], r.Steps[1], r.Steps[2]
	if first.Name != "first" || first.State != "succeeded" || first.ExitCode == nil || *first.ExitCode != 0 || first.Start == nil || first.End == nil {
		t.Errorf("first step: %+v; want succeeded with exit code 0 and its times", first)
	}
	if second.Name != "second" || second.State != "failed" || second.Reason != "exited" || second.ExitCode == nil || *second.ExitCode != 3 {
		t.Errorf("second step: %+v; want failed, exited with 3", second)
	}
	if third.Name != "third" || third.State != "not run" || third.Start != nil {
		t.Errorf("third step: %+v; want not run", third)
	}
	if _, err := os.Stat(filepath.Join(n.r.Root, "var/lib/third-ran")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the third step ran after the second failed: %v", err)
	}
	if !strings.Contains(strings.Join(r.Journal, "\n"), "second step goes wrong") {
		t.Errorf("status's journal lines lack the failed step's output: %q", r.Journal)
	}

	// A daemon-reload drops the per-step results in systemd 252; status
	// says so, with what systemd still knows.
	if err := n.m.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	r = n.report(t, "three-steps.service")
	if r.Phase != apply.PhaseFailed || r.Steps[1].State != "unknown" || !strings.Contains(r.StepsNote, "exited with 3") {
		t.Errorf("after a reload: phase %q, steps %+v, note %q; want failed, unknown steps, a note with the exit status", r.Phase, r.Steps, r.StepsNote)
	}
}

// TestRigISCSIOnce applies the iSCSI example in a real systemd with a fake
// package manager on PATH: the install step really runs it and the hook
// succeeds; applying again does not run it again; changing the hook runs it
// again, once.
func TestRigISCSIOnce(t *testing.T) {
	t.Parallel()
	ctx := rigContext(t)
	n := newRigNode(ctx, t)
	// The host's os-release is a Debian's, whose package manager is apt-get.
	n.prepareISCSI(ctx, map[string]string{
		"apt-get": "#!/bin/sh\necho \"apt-get $*\" >> /var/lib/apt-get.calls\n",
	})
	calls := func() []string {
		b, _ := os.ReadFile(filepath.Join(n.r.Root, "var/lib/apt-get.calls"))
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	spec := readExample(t, "iscsi")
	n.mustApply(ctx, spec)
	r := n.report(t, "iscsi-setup.service")
	if r.Phase != apply.PhaseSucceeded {
		t.Fatalf("phase %q, want succeeded; steps %+v; journal %q", r.Phase, r.Steps, r.Journal)
	}
	// Its last step enables iscsid with systemctl, which reloads systemd,
	// and systemd keeps no per-step results across a reload: the steps
	// before the last are inferred to have succeeded, and status says so.
	for i, s := range r.Steps {
		want := "inferred"
		if i == len(r.Steps)-1 {
			want = "exited"
		}
		if s.State != "succeeded" || s.Reason != want {
			t.Errorf("step %+v, want succeeded (%s)", s, want)
		}
	}
	if !strings.Contains(r.StepsNote, "reloaded") {
		t.Errorf("steps note %q, want it to say that systemd was reloaded", r.StepsNote)
	}
	want := []string{"apt-get update -q", "apt-get install -y -q open-iscsi"}
	if got := calls(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("package manager calls %q, want %q", got, want)
	}

	p, res := n.mustApply(ctx, spec)
	if p.HasChanges() || res.Counts.Restarts+res.Counts.Starts != 0 {
		t.Errorf("re-apply: %s, counts %+v; want nothing", p.Summary(), res.Counts)
	}
	if got := calls(); len(got) != 2 {
		t.Errorf("the re-apply ran the install again: %q", got)
	}

	changed := strings.Replace(spec, "description: Install and start the iSCSI initiator", "description: Install and start the iSCSI initiator (v2)", 1)
	if changed == spec {
		t.Fatal("the example's description moved; update this test")
	}
	n.mustApply(ctx, changed)
	if got := calls(); len(got) != 4 {
		t.Errorf("after a change the install must run once more: calls %q", got)
	}
	if r := n.report(t, "iscsi-setup.service"); r.Phase != apply.PhaseSucceeded {
		t.Errorf("phase after the change %q, want succeeded", r.Phase)
	}
	n.mustApply(ctx, changed)
	if got := calls(); len(got) != 4 {
		t.Errorf("a second apply of the changed hook ran it again: calls %q", got)
	}
}

// TestRigRetryFailedHook: a command hook whose step fails leaves an apply
// that finished, not an unfinished one; re-applying the unchanged spec
// starts the hook again, and does nothing else: no link changes, no
// reload, no restart labelled as the repair of an interrupted apply.
func TestRigRetryFailedHook(t *testing.T) {
	t.Parallel()
	ctx := rigContext(t)
	n := newRigNode(ctx, t)
	spec := `apiVersion: hostprov/v1alpha1
kind: Hooks
hooks:
- name: needs-ready
  when: Always
  steps:
  - name: check
    run: [/bin/test, -e, /var/lib/ready]
`
	if _, res, err := n.apply(ctx, spec); err == nil {
		t.Fatalf("apply of a failing hook succeeded; events:\n%s", eventsText(res))
	}
	r := n.report(t, "needs-ready.service")
	if r.Incomplete || !r.Retry || r.Phase != apply.PhaseFailed {
		t.Errorf("after the failed start: incomplete %v, retry %v, phase %q; want not incomplete, retry, failed", r.Incomplete, r.Retry, r.Phase)
	}

	if err := os.WriteFile(filepath.Join(n.r.Root, "var/lib/ready"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p, res := n.mustApply(ctx, spec)
	var acts []string
	for _, a := range p.Actions {
		acts = append(acts, string(a.Kind)+" "+a.Unit+" ("+a.Reason+")")
	}
	if want := "start needs-ready.service (retry: it failed to start at the last apply)"; strings.Join(acts, "; ") != want {
		t.Errorf("re-apply plans %q, want %q", acts, want)
	}
	if c := res.Counts; c.Starts != 1 || c.Reloads+c.Enables+c.Disables+c.Restarts != 0 {
		t.Errorf("re-apply counts %+v; want one start and nothing else\nevents:\n%s", c, eventsText(res))
	}
	r = n.report(t, "needs-ready.service")
	if r.Incomplete || r.Retry || r.Phase != apply.PhaseSucceeded {
		t.Errorf("after the retry: incomplete %v, retry %v, phase %q; want succeeded", r.Incomplete, r.Retry, r.Phase)
	}
	if p, res := n.mustApply(ctx, spec); p.HasChanges() || len(p.Actions) != 0 {
		t.Errorf("a third apply: %s\nevents:\n%s", p.Summary(), eventsText(res))
	}
}

// onceSpec is a when: Once hook that counts its runs in /var/lib/once.runs.
func onceSpec(version string) string {
	return `apiVersion: hostprov/v1alpha1
kind: Hooks
hooks:
- name: once
  when: Once
  steps:
  - name: count
    sh: echo ` + version + ` >> /var/lib/once.runs
`
}

// onceRuns reads the versions the once hook ran as, in order.
func (n *rigNode) onceRuns(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(n.r.Root, "var/lib/once.runs"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(data))
}

// rigStamps lists the rig's stamp directory.
func (n *rigNode) rigStamps(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(n.r.Root, "var/lib/hostprov/stamps"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestRigOnceRemoveAndAddBack: a when: Once hook that ran, removed with
// hostprov remove and added back, runs again (its stamp went with it); a
// change of the hook runs it once more and leaves only the current
// version's stamp.
func TestRigOnceRemoveAndAddBack(t *testing.T) {
	t.Parallel()
	ctx := rigContext(t)
	n := newRigNode(ctx, t)
	n.mustApply(ctx, onceSpec("v1"))
	if got := n.onceRuns(t); strings.Join(got, " ") != "v1" {
		t.Fatalf("runs after the first apply: %q", got)
	}
	if s := n.rigStamps(t); len(s) != 1 {
		t.Fatalf("stamps after the first run: %q, want one", s)
	}

	st, err := apply.LoadState(apply.StatePath(n.opts.StateDirPath()))
	if err != nil {
		t.Fatal(err)
	}
	rp, err := apply.NewRemovePlan(ctx, []string{"once"}, st, n.opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := apply.Execute(ctx, rp, n.m, nil)
	if err != nil {
		t.Fatalf("remove: %v\nevents:\n%s", err, eventsText(res))
	}
	if !strings.Contains(eventsText(res), "removed /var/lib/hostprov/stamps/once.service.") {
		t.Errorf("the remove's action log does not show the stamp removed:\n%s", eventsText(res))
	}
	if s := n.rigStamps(t); len(s) != 0 {
		t.Errorf("stamps after remove: %q", s)
	}

	n.mustApply(ctx, onceSpec("v1"))
	if got := n.onceRuns(t); strings.Join(got, " ") != "v1 v1" {
		t.Errorf("runs after adding the hook back: %q, want it to run again", got)
	}

	n.mustApply(ctx, onceSpec("v2"))
	if got := n.onceRuns(t); strings.Join(got, " ") != "v1 v1 v2" {
		t.Errorf("runs after the change: %q", got)
	}
	us := rigRender(t, onceSpec("v2"))
	want := ""
	for _, l := range strings.Split(string(us[0].Contents), "\n") {
		if s, ok := strings.CutPrefix(l, "ConditionPathExists=!/var/lib/hostprov/stamps/"); ok {
			want = s
		}
	}
	if s := n.rigStamps(t); len(s) != 1 || s[0] != want {
		t.Errorf("stamps after the change ran: %q, want only the current one, %s", s, want)
	}
}

// reboot reboots the node's rig and connects to its new systemd.
func (n *rigNode) reboot(ctx context.Context, t *testing.T) {
	t.Helper()
	if err := n.r.Reboot(); err != nil {
		t.Fatal(err)
	}
	n.m = dialRig(ctx, t, n.r)
}

// checkSkippedFromStamp checks status's report of the once hook, which ran
// as version v1 and is now skipped by its condition: phase skipped, its
// steps succeeded as its stamp says, at the stamp's time, in JSON too.
func (n *rigNode) checkSkippedFromStamp(t *testing.T, when string) {
	t.Helper()
	r := n.report(t, "once.service")
	if r.Phase != apply.PhaseSkipped {
		t.Errorf("%s: phase %q, want %q; steps %+v", when, r.Phase, apply.PhaseSkipped, r.Steps)
	}
	fi, err := os.Stat(filepath.Join(n.r.Root, r.Stamp))
	if err != nil {
		t.Fatalf("%s: stamp %q: %v", when, r.Stamp, err)
	}
	if r.SucceededAt == nil || !r.SucceededAt.Equal(fi.ModTime()) {
		t.Errorf("%s: succeeded at %v, want the stamp's time %v", when, r.SucceededAt, fi.ModTime())
	}
	if len(r.Steps) != 1 || r.Steps[0].State != "succeeded" || r.Steps[0].Reason != "stamp" {
		t.Errorf("%s: steps %+v, want succeeded (stamp)", when, r.Steps)
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"phase":"skipped"`, `"succeededAt":"`, `"reason":"stamp"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("%s: JSON lacks %s: %s", when, want, data)
		}
	}
	if got := n.onceRuns(t); strings.Join(got, " ") != "v1" {
		t.Errorf("%s: the hook ran again: runs %q", when, got)
	}
}

// TestRigOnceSkippedAfterReboot: a when: Once hook that ran is skipped by
// its condition when started by hand and at the next boot, where systemd
// 252 reports only ConditionResult=no, with no timestamp and no per-step
// results. status says it is skipped and that its steps succeeded, when,
// from its stamp, and a re-apply after the reboot has nothing to do.
func TestRigOnceSkippedAfterReboot(t *testing.T) {
	t.Parallel()
	ctx := rigContext(t)
	n := newRigNode(ctx, t)
	n.mustApply(ctx, onceSpec("v1"))
	if r := n.report(t, "once.service"); r.Phase != apply.PhaseSucceeded || r.SucceededAt == nil {
		t.Errorf("after the apply: phase %q, succeeded at %v; want succeeded, with the stamp's time", r.Phase, r.SucceededAt)
	}

	// Started by hand: stop it (it remains after exit), start it.
	if err := n.m.Stop(ctx, "once.service"); err != nil {
		t.Fatal(err)
	}
	if err := n.m.Start(ctx, "once.service"); err != nil {
		t.Fatal(err)
	}
	n.checkSkippedFromStamp(t, "started by hand")

	n.reboot(ctx, t)
	st := rigStatus(ctx, t, n.m, "once.service")
	if st.ConditionResult || st.ActiveState != "inactive" {
		t.Errorf("after the reboot systemd says condition %v, %s; want the boot to have skipped it", st.ConditionResult, st.ActiveState)
	}
	n.checkSkippedFromStamp(t, "after a reboot")

	if p, res := n.mustApply(ctx, onceSpec("v1")); p.HasChanges() || len(p.Actions) != 0 {
		t.Errorf("re-apply after the reboot: %s\nevents:\n%s", p.Summary(), eventsText(res))
	}
	n.checkSkippedFromStamp(t, "re-applied after a reboot")
}
