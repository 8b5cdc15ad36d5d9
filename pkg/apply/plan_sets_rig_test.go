package apply_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostprov/hostprov/pkg/apply"
)

// bootUnits are the units the packages install to apply the specs of
// /etc/hostprov/hooks.d at boot and whenever one changes.
var bootUnits = []string{"hostprov-apply.service", "hostprov-apply.path", "hostprov-reapply.service"}

// TestRigBootService runs the packaged boot units in a real systemd: the
// path unit applies a spec dropped into /etc/hostprov/hooks.d (its units
// appear and start), a change of it (they change), and its removal (they
// are pruned), and never touches the unit of another spec set there; at a
// reboot, the service applies the directory again and the state holds. The units are the packaging's files, with the binary where
// the rig has it.
func TestRigBootService(t *testing.T) {
	t.Parallel()
	ctx := rigContext(t)
	n := newRigNodeWithHostprov(ctx, t)
	hooksDir := startBootService(ctx, t, n)

	spec := func(version string) string {
		return "apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n- name: boot-demo\n  type: oneshot\n  remainAfterExit: true\n  exec: [/bin/sh, -c, \"echo " + version + " >> /var/lib/boot-demo\"]\n"
	}
	unitFile := filepath.Join(n.r.UnitDir, "boot-demo.service")
	bw := &bootWatch{ctx: ctx, t: t, n: n, unitFile: unitFile}
	waitFor, idle, has := bw.waitFor, bw.idle, bw.has

	// Another spec set of the directory, whose unit must run once: the
	// applies of demo.yaml's changes never restart or prune it.
	other := "apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n- name: other\n  type: oneshot\n  remainAfterExit: true\n  exec: [/bin/sh, -c, \"echo other >> /var/lib/other-runs\"]\n"
	if err := os.WriteFile(filepath.Join(hooksDir, "other.yaml"), []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor("the other spec is applied", func() bool {
		st, err := n.m.Status(ctx, "other.service")
		return err == nil && st.ActiveState == "active"
	})
	otherRuns := func() int {
		data, _ := os.ReadFile(filepath.Join(n.r.Root, "var/lib/other-runs"))
		return strings.Count(string(data), "other\n")
	}

	idle()
	if err := os.WriteFile(filepath.Join(hooksDir, "demo.yaml"), []byte(spec("v1")), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor("a spec dropped into hooks.d is applied", has("v1"))

	// An atomic replace, as an editor or a config tool writes.
	idle()
	tmp := filepath.Join(hooksDir, ".demo.yaml.new")
	if err := os.WriteFile(tmp, []byte(spec("v2")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(hooksDir, "demo.yaml")); err != nil {
		t.Fatal(err)
	}
	waitFor("a changed spec is applied", has("v2"))

	idle()
	if err := os.Remove(filepath.Join(hooksDir, "demo.yaml")); err != nil {
		t.Fatal(err)
	}
	waitFor("a removed spec's units are pruned", func() bool {
		_, err := os.Stat(unitFile)
		return os.IsNotExist(err)
	})

	// Back, then a reboot: the boot service applies hooks.d again, and
	// the state, which holds the unit, is where it was.
	idle()
	if err := os.WriteFile(filepath.Join(hooksDir, "demo.yaml"), []byte(spec("v3")), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor("a spec added back is applied", has("v3"))
	idle()
	if got := otherRuns(); got != 1 {
		t.Errorf("the other set's unit ran %d times while demo.yaml changed, want once", got)
	}
	n.reboot(ctx, t)
	st, err := apply.LoadState(apply.StatePath(n.opts.StateDirPath()))
	if err != nil || st.Unit("boot-demo.service") == nil || st.Unit("boot-demo.service").Set != "demo" {
		t.Fatalf("the state after the reboot: %+v, %v; want boot-demo.service in set demo", st, err)
	}
	waitFor("the boot service ran at the reboot", func() bool {
		s, err := n.m.Status(ctx, "hostprov-apply.service")
		return err == nil && s.ActiveState == "active" && s.Result == "success"
	})
	if !has("v3")() {
		t.Errorf("after the reboot boot-demo.service is not active with v3")
	}
	data, err := os.ReadFile(filepath.Join(n.r.Root, "var/lib/boot-demo"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(data)); strings.Join(got, " ") != "v1 v2 v3 v3" {
		t.Errorf("boot-demo ran %q; want v1, v2, v3, and v3 again at the boot", got)
	}
}

// startBootService installs the packaged boot units, as a package does,
// enables them and starts the path unit; it returns the hooks directory.
func startBootService(ctx context.Context, t *testing.T, n *rigNode) string {
	t.Helper()
	for _, name := range bootUnits {
		data, err := os.ReadFile(filepath.Join("../../packaging/systemd", name))
		if err != nil {
			t.Fatal(err)
		}
		unit := strings.ReplaceAll(string(data), "/usr/bin/hostprov", "/opt/hostprov")
		if err := n.r.WriteUnit(name, []byte(unit)); err != nil {
			t.Fatal(err)
		}
	}
	hooksDir := filepath.Join(n.r.Root, "etc/hostprov/hooks.d")
	if err := os.MkdirAll(hooksDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := n.r.Run(ctx, "systemctl", "enable", "hostprov-apply.service", "hostprov-apply.path"); err != nil {
		t.Fatalf("enable: %v\n%s", err, out)
	}
	if out, err := n.r.Run(ctx, "systemctl", "start", "hostprov-apply.path"); err != nil {
		t.Fatalf("start the path unit: %v\n%s", err, out)
	}
	return hooksDir
}

// bootWatch waits for what the boot units do on their own time.
type bootWatch struct {
	ctx      context.Context
	t        *testing.T
	n        *rigNode
	unitFile string // boot-demo.service's
}

// waitFor polls until ok holds (systemd applies on its own time), and
// fails with what the rig's journal says of the apply otherwise.
func (bw *bootWatch) waitFor(what string, ok func() bool) {
	bw.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			out, _ := bw.n.r.Run(bw.ctx, "journalctl", "--no-pager", "-u", "hostprov-apply.service", "-u", "hostprov-reapply.service", "-u", "hostprov-apply.path")
			bw.t.Fatalf("%s: not within 60s; the journal says:\n%s", what, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// idle waits until no apply the path unit started runs. apply -d reads
// the directory again when it is done and applies a change made meanwhile
// (TestApplyDirChangedDuring), but one made in the instant between that
// read and the service's end is seen only at the next change or boot, as
// the path unit watches only while its service is not running: the test
// makes each change once the last is done.
func (bw *bootWatch) idle() {
	bw.t.Helper()
	bw.waitFor("the last apply is done", func() bool {
		s, err := bw.n.m.Status(bw.ctx, "hostprov-reapply.service")
		return err == nil && (s.ActiveState == "inactive" || s.ActiveState == "failed")
	})
}

// has reports whether boot-demo.service is applied with version, and
// active.
func (bw *bootWatch) has(version string) func() bool {
	return func() bool {
		data, err := os.ReadFile(bw.unitFile)
		if err != nil || !strings.Contains(string(data), "echo "+version) {
			return false
		}
		st, err := bw.n.m.Status(bw.ctx, "boot-demo.service")
		return err == nil && st.ActiveState == "active" && !st.NeedDaemonReload
	}
}

// TestRigSpecSets: in a real systemd, applying set b (and changing it)
// never stops, restarts or prunes set a's running service; removing b's
// hook prunes only b's unit.
func TestRigSpecSets(t *testing.T) {
	t.Parallel()
	ctx := rigContext(t)
	n := newRigNode(ctx, t)
	apply1 := func(sets ...apply.SpecSet) {
		t.Helper()
		st, err := apply.LoadState(apply.StatePath(n.opts.StateDirPath()))
		if err != nil {
			t.Fatal(err)
		}
		p, err := apply.NewPlanSets(ctx, sets, st, n.opts)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := apply.Execute(ctx, p, n.m, nil); err != nil {
			t.Fatalf("apply: %v\n%s", err, eventsText(res))
		}
	}
	a := set(t, "a", "a.yaml", "- name: sa\n  exec: [/bin/sleep, infinity]\n")
	apply1(a)
	before := rigStatus(ctx, t, n.m, "sa.service")
	if before.ActiveState != "active" || before.ActiveEnter.IsZero() {
		t.Fatalf("sa.service: %s, active since %v", before.ActiveState, before.ActiveEnter)
	}
	apply1(set(t, "b", "b.yaml", "- name: sb\n  exec: [/bin/sleep, infinity]\n- name: sc\n  exec: [/bin/sleep, infinity]\n"))
	apply1(set(t, "b", "b.yaml", "- name: sb\n  exec: [/bin/sleep, \"1000000\"]\n"))
	after := rigStatus(ctx, t, n.m, "sa.service")
	if !after.ActiveEnter.Equal(before.ActiveEnter) || after.ActiveState != "active" {
		t.Errorf("sa.service of set a: active since %v, then %v (%s); want it untouched", before.ActiveEnter, after.ActiveEnter, after.ActiveState)
	}
	if st := rigStatus(ctx, t, n.m, "sc.service"); st.LoadState != "not-found" {
		t.Errorf("sc.service, dropped from set b: %s, want pruned", st.LoadState)
	}
	if st := rigStatus(ctx, t, n.m, "sb.service"); st.ActiveState != "active" {
		t.Errorf("sb.service: %s", st.ActiveState)
	}
}
