package apply_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostprov/hostprov/pkg/apply"
)

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

	checkForeign := startForeign(ctx, t, n)

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

// startForeign installs and starts a unit that is not hostprov's, and
// returns the check that it is as it was, never restarted.
func startForeign(ctx context.Context, t *testing.T, n *rigNode) func(when string) {
	t.Helper()
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
	return checkForeign
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
