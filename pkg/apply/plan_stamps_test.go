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

	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/units"
)

const onceHook = `
- name: setup
  when: Once
  steps:
  - name: install
    run: [/bin/true]
`

// stampOfUnit returns the stamp a unit file on the node names, as a path
// on this machine.
func (n *node) stampOfUnit(unit string) string {
	n.t.Helper()
	f, err := units.Parse([]byte(n.read(unit)))
	if err != nil {
		n.t.Fatal(err)
	}
	for _, v := range f.Values(units.SectionUnit, "ConditionPathExists") {
		if s, ok := strings.CutPrefix(v, "!"); ok {
			return filepath.Join(n.root, s)
		}
	}
	n.t.Fatalf("%s names no stamp", unit)
	return ""
}

// run does what the unit's ExecStartPost= does after its steps succeed.
func (n *node) touch(path string) {
	n.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		n.t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		n.t.Fatal(err)
	}
}

func (n *node) stampDir() string { return filepath.Join(n.root, "var/lib/hostprov/stamps") }

// stamps lists the stamp directory.
func (n *node) stamps() []string {
	n.t.Helper()
	ents, err := os.ReadDir(n.stampDir())
	if err != nil && !os.IsNotExist(err) {
		n.t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func removedPaths(res *apply.Result) []string {
	var out []string
	for _, ev := range res.Events {
		if ev.Action == apply.EvRemoved {
			out = append(out, ev.Path+" ("+ev.Reason+")")
		}
	}
	return out
}

// TestOnceStampRemovedWithHook: removing a when: Once hook (from the spec,
// or with remove) removes its stamp, in the plan and the action log, so
// that adding it back runs it again.
func TestOnceStampRemovedWithHook(t *testing.T) {
	n := newNode(t)
	n.mustApply(onceHook)
	stamp := n.stampOfUnit("setup.service")
	n.touch(stamp) // the hook ran
	stampNode := strings.TrimPrefix(stamp, n.root)

	p := n.plan("")
	var b bytes.Buffer
	p.WriteText(&b)
	want := "remove " + stampNode + " (stamp of the hook, removed from the spec)"
	if !strings.Contains(b.String(), want) {
		t.Errorf("plan text lacks %q:\n%s", want, b.String())
	}
	res, calls := n.mustApply("")
	checkCalls(t, calls, "stop setup.service", "disable setup.service", "reload")
	if got := removedPaths(res); !slices.Contains(got, stampNode+" (stamp of the hook, removed from the spec)") {
		t.Errorf("action log's removals %q lack the stamp", got)
	}
	if s := n.stamps(); len(s) != 0 {
		t.Errorf("stamps left after the hook was removed: %q", s)
	}

	// Added back, it is new, and nothing keeps it from running.
	n.mustApply(onceHook)
	if _, err := os.Stat(n.stampOfUnit("setup.service")); !os.IsNotExist(err) {
		t.Errorf("the re-added hook's stamp is there: %v", err)
	}

	// hostprov remove does the same.
	n.touch(stamp)
	st := n.state()
	rp, err := apply.NewRemovePlan(context.Background(), []string{"setup"}, st, n.opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := apply.Execute(context.Background(), rp, n.sd, nil); err != nil {
		t.Fatal(err)
	}
	if s := n.stamps(); len(s) != 0 {
		t.Errorf("stamps left after remove: %q", s)
	}
}

// TestOnceStampOfChangedHook: a changed hook runs again, and the stamp of
// its earlier content goes; only the current one stays. Files in the stamp
// directory that are not the unit's own stamps stay, as does a stamp that
// is a symbolic link.
func TestOnceStampOfChangedHook(t *testing.T) {
	n := newNode(t)
	n.mustApply(onceHook)
	old := n.stampOfUnit("setup.service")
	n.touch(old)
	others := []string{
		"setup.service.0123456789abcdeX", // not hex
		"setup.service.0123456789abcde",  // too short
		"setup2.service.0123456789abcdef",
		"other.service.0123456789abcdef",
		"setup.service.0123456789abcdef.tmp",
	}
	for _, o := range others {
		n.touch(filepath.Join(n.stampDir(), o))
	}
	target := filepath.Join(n.root, "precious")
	n.touch(target)
	link := filepath.Join(n.stampDir(), "setup.service.fedcba9876543210")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}

	changed := strings.Replace(onceHook, "[/bin/true]", "[/bin/true, v2]", 1)
	p := n.plan(changed)
	var stampsPlanned []string
	for _, f := range p.Files {
		if f.Stamp {
			stampsPlanned = append(stampsPlanned, f.Path+" "+string(f.Op)+" ("+f.Reason+")")
		}
	}
	oldNode := strings.TrimPrefix(old, n.root)
	if want := []string{oldNode + " remove (stamp of an earlier version of the hook)"}; !slices.Equal(stampsPlanned, want) {
		t.Errorf("planned stamps %q, want %q", stampsPlanned, want)
	}
	res, calls := n.mustApply(changed)
	checkCalls(t, calls, "reload", "restart setup.service")
	if got := removedPaths(res); !slices.Contains(got, oldNode+" (stamp of an earlier version of the hook)") {
		t.Errorf("action log's removals %q lack the old stamp", got)
	}
	cur := n.stampOfUnit("setup.service")
	if cur == old {
		t.Fatal("the changed hook names the same stamp")
	}
	n.touch(cur) // the changed hook ran
	want := append(slices.Clone(others), filepath.Base(cur), filepath.Base(link))
	slices.Sort(want)
	if got := n.stamps(); !slices.Equal(got, want) {
		t.Errorf("stamp directory %q, want %q", got, want)
	}
	if _, err := os.Stat(target); err != nil {
		t.Errorf("the link's target: %v", err)
	}
	// The current stamp stays, and a re-apply has nothing to do.
	if p := n.plan(changed); p.HasChanges() {
		var b bytes.Buffer
		p.WriteText(&b)
		t.Errorf("re-apply after the run plans changes:\n%s", b.String())
	}
}

// TestOnceStaleStampNoReload: a stamp of an earlier content left behind
// (by an older hostprov) is removed without a reload or a restart: it is
// not a unit file.
func TestOnceStaleStampNoReload(t *testing.T) {
	n := newNode(t)
	n.mustApply(onceHook)
	stale := filepath.Join(n.stampDir(), "setup.service.00000000000000aa")
	n.touch(stale)
	res, calls := n.mustApply(onceHook)
	checkCalls(t, calls)
	if res.Counts.Removes != 1 || res.Counts.Reloads != 0 {
		t.Errorf("counts %+v; want the stamp removed and nothing else", res.Counts)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale stamp: %v", err)
	}
}

// TestOnceStampDirLink: a stamp directory that is a symbolic link is
// never removed from, with a warning that says why.
func TestOnceStampDirLink(t *testing.T) {
	n := newNode(t)
	n.mustApply(onceHook)
	elsewhere := filepath.Join(n.root, "elsewhere")
	if err := os.MkdirAll(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(elsewhere, filepath.Base(n.stampOfUnit("setup.service")))
	n.touch(victim)
	if err := os.Symlink(elsewhere, n.stampDir()); err != nil {
		t.Fatal(err)
	}
	p := n.plan("")
	found := false
	for _, w := range p.Warnings {
		if strings.Contains(w.Message, "is a symbolic link") && strings.Contains(w.Message, "stamps are left alone") {
			found = true
		}
	}
	if !found {
		t.Errorf("no warning about the linked stamp directory: %+v", p.Warnings)
	}
	n.mustApply("")
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("a file was removed through the link: %v", err)
	}
}

const stampsBefore = `
- name: a
  when: Once
  steps:
  - name: one
    run: [/bin/true]
- name: b
  when: Once
  steps:
  - name: one
    run: [/bin/true]
`

const stampsAfter = `
- name: a
  when: Once
  steps:
  - name: one
    run: [/bin/true, v2]
`

// TestCrashStampsAtEveryStep crashes an apply that changes one when: Once
// hook and removes another at every file operation and every systemd
// call: no unit file on disk ever lacks the stamp it names while its hook
// ran (it would run again at the next boot), and the next apply leaves no
// stamp of either behind.
func TestCrashStampsAtEveryStep(t *testing.T) {
	for _, kind := range []string{"file", "systemd"} {
		for n := 1; ; n++ {
			node := newNode(t)
			node.mustApply(stampsBefore)
			for _, u := range []string{"a.service", "b.service"} {
				node.touch(node.stampOfUnit(u))
			}
			p := node.plan(stampsAfter)
			var (
				sd   apply.Systemd = node.sd
				fops apply.FileOps = apply.OSFiles
				cf   *crashFiles
				csd  *crashSystemd
			)
			if kind == "file" {
				cf = &crashFiles{n: n}
				fops = cf
			} else {
				csd = &crashSystemd{Systemd: node.sd, n: n}
				sd = csd
			}
			_, err := apply.ExecuteWith(context.Background(), p, sd, nil, fops)
			if err == nil {
				t.Logf("%s: crashed at each of %d steps", kind, n-1)
				break
			}
			where := fmt.Sprintf("%s crash at step %d", kind, n)
			for _, u := range []string{"a.service", "b.service"} {
				if !node.exists(u) {
					continue
				}
				stamp := node.stampOfUnit(u)
				if strings.Contains(node.read(u), "v2") {
					continue // the new a, which has not run yet
				}
				if _, err := os.Stat(stamp); err != nil {
					t.Errorf("%s: %s is on disk without its stamp: it would run again", where, u)
				}
			}
			node.mustApply(stampsAfter)
			if s := node.stamps(); len(s) != 0 {
				t.Errorf("%s: stamps left after the next apply: %q", where, s)
			}
		}
	}
}
