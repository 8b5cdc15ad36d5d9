package apply_test

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

	"github.com/hostprov/hostprov/internal/fsutil"
	"github.com/hostprov/hostprov/internal/killpoint"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render"
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
		us := rigRender(t, specs[side])
		for _, u := range us {
			versions[u.Name] = append(versions[u.Name], u.Contents)
		}
	}
	c := &crashRig{n: n, specs: specs, versions: versions, temps: map[string]bool{}}
	full := c.converge(ctx, t, "A")
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
		c.checkFiles(t, fmt.Sprintf("round %d, %s killed after %v", i, side, delay))
		if t.Failed() {
			t.FailNow()
		}
		c.converge(ctx, t, side)
	}
	t.Logf("%d of %d applies killed; actions logged before the kill -> kills: %v", killed, rounds, progress)
	names := slices.Sorted(maps.Keys(c.temps))
	t.Logf("temporary files kills left in the unit directory before the next apply: %d, such as %v", len(c.temps), names[:min(len(names), 5)])
	// The converging applies removed them.
	if left, _ := filepath.Glob(filepath.Join(n.r.UnitDir, ".*.tmp-*")); len(left) > 0 {
		t.Errorf("temporary files left after the converging apply: %v", left)
	}
	if killed < wantKills || len(progress) < 3 {
		t.Errorf("only %d kills, at %d different points: the test did not cut applies at enough places", killed, len(progress))
	}
}

// crashRig is the node TestRigCrash kills applies on, with every version
// of every unit file either spec renders.
type crashRig struct {
	n        *rigNode
	specs    map[string]string   // side -> spec
	versions map[string][][]byte // unit -> contents
	// temps are the temporary files kills left behind.
	temps map[string]bool
}

func (c *crashRig) hostprov(ctx context.Context, args ...string) (string, error) {
	return c.n.r.Run(ctx, append([]string{"/opt/hostprov"}, args...)...)
}

// converge applies side to the end and checks that nothing is left to do
// and that systemd agrees.
func (c *crashRig) converge(ctx context.Context, t *testing.T, side string) time.Duration {
	t.Helper()
	t0 := time.Now()
	if out, err := c.hostprov(ctx, "apply", "-f", "/root/"+side+".yaml"); err != nil {
		t.Fatalf("apply %s after a kill: %v\n%s", side, err, out)
	}
	d := time.Since(t0)
	if out, err := c.hostprov(ctx, "plan", "-f", "/root/"+side+".yaml", "--detailed-exitcode"); err != nil || !strings.HasSuffix(strings.TrimSpace(out), "No changes.") {
		t.Fatalf("plan %s after the converging apply: %v\n%s", side, err, out)
	}
	c.n.checkUnitsApplied(ctx, t, c.specs[side])
	us := rigRender(t, c.specs[side])
	for name := range c.versions {
		if !slices.ContainsFunc(us, func(u compile.Unit) bool { return u.Name == name }) {
			if st := rigStatus(ctx, t, c.n.m, name); st.LoadState != "not-found" || st.ActiveState != "inactive" {
				t.Errorf("side %s: %s, not in the spec, is %s/%s", side, name, st.LoadState, st.ActiveState)
			}
		}
	}
	return d
}

// checkFiles checks that every unit file is whole, and collects the
// temporary files kills left behind.
func (c *crashRig) checkFiles(t *testing.T, when string) {
	t.Helper()
	entries, err := os.ReadDir(c.n.r.UnitDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue // .wants directories, mask links
		}
		if strings.HasPrefix(e.Name(), ".") {
			c.temps[e.Name()] = true
			continue
		}
		data, err := os.ReadFile(filepath.Join(c.n.r.UnitDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(c.versions[e.Name()], func(v []byte) bool { return bytes.Equal(v, data) }) {
			t.Errorf("%s: %s is neither its old nor its new content:\n%s", when, e.Name(), data)
		}
	}
	if _, err := apply.LoadState(apply.StatePath(c.n.opts.StateDirPath())); err != nil {
		t.Errorf("%s: the state file: %v", when, err)
	}
}

// killSpec is one side of the kill-point test: units enabled and not,
// drop-ins added, changed and removed, a unit removed and one added, and
// a user the apply creates (with systemd-sysusers) with a file of its own
// that changes.
func killSpec(side string) string {
	var b strings.Builder
	// One spec set, whose file is A.yaml or B.yaml: two versions of one spec.
	b.WriteString("apiVersion: hostprov/v1alpha1\nkind: Hooks\nmetadata:\n  name: kp\nhooks:\n")
	fmt.Fprintf(&b, `- name: kp-plain
  type: oneshot
  remainAfterExit: true
  exec: [/bin/sh, -c, "echo %[1]s >> /var/lib/kp-runs"]
- name: kp-off
  description: never enabled, side %[1]s
  exec: [/bin/sleep, infinity]
  enabled: false
- name: kp-daemon
  exec: [/bin/sleep, infinity]
  dropins:
  - name: 10-env.conf
    contents: "[Service]\nEnvironment=SIDE=%[1]s\n"
`, side)
	if side == "A" {
		b.WriteString(`  - name: 20-only-a.conf
    contents: "[Service]\nEnvironment=ONLY=a\n"
- name: kp-gone
  type: oneshot
  remainAfterExit: true
  exec: [/bin/true]
`)
	} else {
		b.WriteString(`- name: kp-added
  type: oneshot
  remainAfterExit: true
  exec: [/bin/true]
`)
	}
	fmt.Fprintf(&b, `- name: kp-owned
  type: oneshot
  remainAfterExit: true
  user: kp-user
  exec: [/bin/cat, /etc/kp/config]
  users: [{name: kp-user}]
  files: [{path: /etc/kp/config, contents: "side %s\n", mode: 0600, user: kp-user}]
`, side)
	return b.String()
}

// killKinds are the kinds of step internal/killpoint marks in the file
// operations and calls of an apply.
var killKinds = []string{"create", "write", "fsync", "rename", "unlink", "mkdir", "systemd", "sysusers"}

// TestRigKillPoints kills hostprov apply (a build with kill points, the
// real binary inside the rig) just before each of its file system steps
// and systemd calls in turn: the 1st create of a temporary file, the
// 2nd, ..., until an apply runs to its end; the same for every write,
// fsync, rename, unlink, mkdir, call to systemd and run of systemd-sysusers. It does so for a
// first apply on an empty node and for changes both ways between two
// specs. After every kill each unit file is its old or its new bytes and
// the state is readable; the next apply (a normal one) converges: plan
// says "No changes.", systemd runs the spec's units, and no temporary
// file is left in the unit or the state directory.
func TestRigKillPoints(t *testing.T) {
	t.Parallel()
	// Two applies for every kill point, one after another, in the rig:
	// minutes on a two-core machine, and more while the rest of the suite
	// runs beside it, so not the 5 minutes of one rig test.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	t.Cleanup(cancel)
	n := newRigNodeWithHostprov(ctx, t, "killpoints")
	specs := map[string]string{"empty": "apiVersion: hostprov/v1alpha1\nkind: Hooks\nmetadata:\n  name: kp\nhooks: []\n", "A": killSpec("A"), "B": killSpec("B")}
	versions := map[string][][]byte{} // every version of every file, by path in the unit dir
	for side, s := range specs {
		if err := os.WriteFile(filepath.Join(n.r.Root, "root", side+".yaml"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		us := rigRender(t, s)
		for _, f := range render.Files(us) {
			versions[f.Path] = append(versions[f.Path], f.Contents)
		}
	}
	hostprov := func(env string, args ...string) (string, error) {
		return n.r.Run(ctx, append([]string{"env", env, "/opt/hostprov"}, args...)...)
	}
	converge := func(side, when string) {
		t.Helper()
		if out, err := hostprov("HOSTPROV_KILLPOINT=", "apply", "-f", "/root/"+side+".yaml"); err != nil {
			t.Fatalf("%s: apply %s: %v\n%s", when, side, err, out)
		}
		if out, err := hostprov("HOSTPROV_KILLPOINT=", "plan", "-f", "/root/"+side+".yaml", "--detailed-exitcode"); err != nil || !strings.HasSuffix(strings.TrimSpace(out), "No changes.") {
			t.Fatalf("%s: plan %s after the converging apply: %v\n%s", when, side, err, out)
		}
		n.checkUnitsApplied(ctx, t, specs[side])
		for _, dir := range []string{n.r.UnitDir, n.opts.StateDirPath()} {
			var temps []string
			filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if err == nil && fsutil.TempOf(d.Name()) != "" {
					temps = append(temps, p)
				}
				return nil
			})
			if len(temps) > 0 {
				t.Errorf("%s: temporary files left after the converging apply: %v", when, temps)
			}
		}
	}
	checkFiles := func(when string) {
		t.Helper()
		for rel, content := range files(t, n.r.UnitDir) {
			if strings.HasPrefix(content, "-> ") || fsutil.TempOf(filepath.Base(rel)) != "" {
				continue // enable links; a kill's leftovers, checked after the next apply
			}
			if !slices.ContainsFunc(versions[filepath.ToSlash(rel)], func(v []byte) bool { return bytes.Equal(v, []byte(content)) }) {
				t.Errorf("%s: %s is neither its old nor its new content:\n%s", when, rel, content)
			}
		}
		if _, err := apply.LoadState(apply.StatePath(n.opts.StateDirPath())); err != nil {
			t.Errorf("%s: the state file: %v", when, err)
		}
	}

	kills := map[string]int{}
	total := 0
	for _, move := range [][2]string{{"empty", "A"}, {"A", "B"}, {"B", "A"}} {
		from, to := move[0], move[1]
		for _, kind := range killKinds {
			for i := 1; ; i++ {
				converge(from, fmt.Sprintf("back to %s", from))
				when := fmt.Sprintf("%s -> %s, killed before %s #%d", from, to, kind, i)
				out, err := hostprov(killpoint.Env+"="+fmt.Sprintf("%s:%d", kind, i), "apply", "-f", "/root/"+to+".yaml")
				if err == nil {
					break // fewer than i steps of this kind: each was a kill point
				}
				if !strings.Contains(err.Error(), "signal: killed") && !strings.Contains(err.Error(), "exit status 137") {
					t.Fatalf("%s: apply failed without being killed: %v\n%s", when, err, out)
				}
				kills[kind]++
				total++
				checkFiles(when)
				converge(to, when)
				if t.Failed() {
					t.FailNow()
				}
			}
		}
	}
	t.Logf("%d kills, by kind: %v", total, kills)
	for _, kind := range killKinds {
		if kills[kind] == 0 {
			t.Errorf("no apply was killed before a step of kind %s: is the kill point still there?", kind)
		}
	}
}
