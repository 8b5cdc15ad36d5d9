package apply_test

import (
	"bytes"
	"context"
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

	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/compile"
)

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
	us, _ := rigRender(t, c.specs[side])
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
