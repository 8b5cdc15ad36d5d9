package apply_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostprov/hostprov/internal/fsutil"
	"github.com/hostprov/hostprov/internal/killpoint"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/render"
)

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
		us, _ := rigRender(t, s)
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
