package apply_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/hostprov/hostprov/internal/fsutil"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/render"
)

var errCrash = errors.New("simulated crash")

// crashFiles fails the nth file operation (writes of unit files, drop-ins
// and the state file, and removals) and every one after it, as if the
// process had died there.
type crashFiles struct {
	n, count int
}

func (c *crashFiles) step() error {
	c.count++
	if c.count >= c.n {
		return errCrash
	}
	return nil
}

// WriteFiles (of the state) dies before it writes anything.
func (c *crashFiles) WriteFiles(files []fsutil.File) (int, error) {
	if err := c.step(); err != nil {
		return 0, err
	}
	return apply.OSFiles.WriteFiles(files)
}

// Prepare dies before it writes anything.
func (c *crashFiles) Prepare(files []fsutil.File) (*fsutil.Batch, error) {
	if err := c.step(); err != nil {
		return nil, err
	}
	return apply.OSFiles.Prepare(files)
}

// Commit dies at the file whose turn it is to fail: the files before it
// are in place, as if the process had died between two renames.
func (c *crashFiles) Commit(b *fsutil.Batch) (int, error) {
	for i := range b.Len() {
		if err := c.step(); err != nil {
			n, werr := b.CommitN(i)
			if werr != nil {
				return n, werr
			}
			return n, err
		}
	}
	return apply.OSFiles.Commit(b)
}

func (c *crashFiles) Remove(dir *fsutil.Dir, name string) error {
	if err := c.step(); err != nil {
		return err
	}
	return apply.OSFiles.Remove(dir, name)
}

func (c *crashFiles) RemoveEmptyDir(dir *fsutil.Dir, name string) error {
	if err := c.step(); err != nil {
		return err
	}
	return apply.OSFiles.RemoveEmptyDir(dir, name)
}

// crashSystemd fails the nth systemd call and every one after it.
type crashSystemd struct {
	apply.Systemd
	mu       sync.Mutex
	n, count int
}

func (c *crashSystemd) step() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.count++
	if c.count >= c.n {
		return errCrash
	}
	return nil
}

func (c *crashSystemd) Reload(ctx context.Context) error {
	if err := c.step(); err != nil {
		return err
	}
	return c.Systemd.Reload(ctx)
}

// links takes a step, then makes or removes links with do.
func (c *crashSystemd) links(ctx context.Context, n []string, do func(context.Context, []string) ([]apply.LinkChange, error)) ([]apply.LinkChange, error) {
	if err := c.step(); err != nil {
		return nil, err
	}
	return do(ctx, n)
}

func (c *crashSystemd) Enable(ctx context.Context, n []string) ([]apply.LinkChange, error) {
	return c.links(ctx, n, c.Systemd.Enable)
}

func (c *crashSystemd) Disable(ctx context.Context, n []string) ([]apply.LinkChange, error) {
	return c.links(ctx, n, c.Systemd.Disable)
}

func (c *crashSystemd) Mask(ctx context.Context, n []string) ([]apply.LinkChange, error) {
	return c.links(ctx, n, c.Systemd.Mask)
}

func (c *crashSystemd) Unmask(ctx context.Context, n []string) ([]apply.LinkChange, error) {
	return c.links(ctx, n, c.Systemd.Unmask)
}

func (c *crashSystemd) Start(ctx context.Context, n string) error {
	if err := c.step(); err != nil {
		return err
	}
	return c.Systemd.Start(ctx, n)
}

func (c *crashSystemd) Restart(ctx context.Context, n string) error {
	if err := c.step(); err != nil {
		return err
	}
	return c.Systemd.Restart(ctx, n)
}

func (c *crashSystemd) Stop(ctx context.Context, n string) error {
	if err := c.step(); err != nil {
		return err
	}
	return c.Systemd.Stop(ctx, n)
}

const crashBefore = `
- name: keep
  exec: [/bin/sleep, infinity]
- name: change
  exec: [/bin/echo, old]
  dropins:
  - name: 10-a.conf
    contents: "[Service]\nEnvironment=A=old\n"
- name: gone
  type: oneshot
  exec: [/bin/true]
- name: install
  exec: [/bin/true]
- name: disabled
  exec: [/bin/true]
`

const crashAfter = `
- name: keep
  exec: [/bin/sleep, infinity]
- name: change
  exec: [/bin/echo, new]
  dropins:
  - name: 10-a.conf
    contents: "[Service]\nEnvironment=A=new\n"
  - name: 20-b.conf
    contents: "[Service]\nEnvironment=B=new\n"
- name: install
  exec: [/bin/true]
  wantedBy: [graphical.target]
- name: disabled
  exec: [/bin/true]
  enabled: false
- name: added
  exec: [/bin/true]
- name: masked.service
  mask: true
`

// files lists every file under the unit dir with its content ("->" and
// the target for links), ignoring nothing: a leftover temporary file is a
// difference too.
func files(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if fi.Mode()&os.ModeSymlink != 0 {
			l, _ := os.Readlink(p)
			out[rel] = "-> " + l
			return nil
		}
		data, err := os.ReadFile(p)
		out[rel] = string(data)
		return err
	})
	return out
}

func expected(t testing.TB, hooksYAML string) map[string]string {
	us := spec(t, hooksYAML)
	out := map[string]string{}
	for _, f := range render.Files(us) {
		out[filepath.FromSlash(f.Path)] = string(f.Contents)
	}
	return out
}

// TestCrashAtEveryStep makes an apply fail at its nth file operation and,
// separately, at its nth systemd call, for every n, and checks that every
// unit file is then either old or new (never partial, never unknown to
// the state), and that the next apply converges: the files the spec says,
// the systemd state it says, and then nothing left to do.
//
// It does so for the first apply on a node too, where a crash leaves units
// that the state knows of but whose files were never written: the next
// apply must not ask systemd to disable them (systemd refuses a unit it
// cannot find, and every later apply would fail the same way).
func TestCrashAtEveryStep(t *testing.T) {
	for _, first := range []bool{false, true} {
		from := crashBefore
		if first {
			from = ""
		}
		t.Run(map[bool]string{false: "changing", true: "first apply"}[first], func(t *testing.T) {
			crashAtEveryStep(t, from)
		})
	}
}

func crashAtEveryStep(t *testing.T, from string) {
	before, after := expected(t, from), expected(t, crashAfter)
	for _, kind := range []string{"file", "systemd"} {
		for n := 1; ; n++ {
			node := newNode(t)
			node.mustApply(from)
			p := node.plan(crashAfter)
			var (
				sd    apply.Systemd = node.sd
				fops  apply.FileOps = apply.OSFiles
				cf    *crashFiles
				csd   *crashSystemd
				steps int
			)
			if kind == "file" {
				cf = &crashFiles{n: n}
				fops = cf
			} else {
				csd = &crashSystemd{Systemd: node.sd, n: n}
				sd = csd
			}
			_, err := apply.ExecuteWith(context.Background(), p, sd, nil, fops)
			if cf != nil {
				steps = cf.count
			} else {
				steps = csd.count
			}
			if err == nil {
				if steps >= n {
					t.Fatalf("%s crash at %d: no error", kind, n)
				}
				t.Logf("%s: crashed at each of %d steps", kind, n-1)
				break // n is past the last step: every point was tried
			}
			if !errors.Is(err, errCrash) && !strings.Contains(err.Error(), errCrash.Error()) {
				t.Fatalf("%s crash at %d: unexpected error %v", kind, n, err)
			}
			where := fmt.Sprintf("%s crash at step %d", kind, n)

			// Every file is old or new, and hostprov knows it.
			st := node.state()
			for rel, content := range files(t, filepath.Join(node.root, "etc/systemd/system")) {
				if content != before[rel] && content != after[rel] {
					t.Errorf("%s: %s is neither old nor new:\n%s", where, rel, content)
				}
				owned := false
				for _, u := range st.Units {
					for _, f := range u.Files {
						if filepath.FromSlash(f.Path) == rel {
							owned = true
						}
					}
				}
				if !owned {
					t.Errorf("%s: %s is on disk but not in the state", where, rel)
				}
			}

			// The next apply converges.
			res, _ := node.mustApply(crashAfter)
			if got := files(t, filepath.Join(node.root, "etc/systemd/system")); !equalMaps(got, after) {
				t.Errorf("%s: after the next apply the files are %v, want %v", where, keys(got), keys(after))
			}
			if p := node.plan(crashAfter); p.HasChanges() || len(p.Actions) > 0 {
				t.Errorf("%s: not converged after the next apply: %s %v", where, p.Summary(), p.Actions)
			}
			want := []string{"active added.service", "active change.service", "active install.service", "active keep.service",
				"enabled added.service", "enabled change.service", "enabled install.service", "enabled keep.service", "masked masked.service"}
			if got := node.sd.State(); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("%s: systemd state after the next apply:\n got %v\nwant %v\n(recovery: %+v)", where, got, want, res.Counts)
			}
			for _, u := range node.state().Units {
				if u.Incomplete {
					t.Errorf("%s: %s still incomplete", where, u.Name)
				}
			}
		}
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func keys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func TestFirstApply(t *testing.T) {
	n := newNode(t)
	p := n.plan(twoHooks)
	if got, want := p.Summary(), "Plan: 2 to add, 0 to change, 0 to remove."; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	res, calls := n.mustApply(twoHooks)
	checkCalls(t, calls, "enable hello.service prep.service", "reload", "start hello.service", "start prep.service")
	if c := res.Counts; c.Writes != 2 || c.Reloads != 1 || c.Enables != 2 || c.Starts != 2 {
		t.Errorf("counts %+v", c)
	}
	if !strings.Contains(n.read("hello.service"), "ExecStart=/bin/echo hello") {
		t.Errorf("hello.service:\n%s", n.read("hello.service"))
	}
	fi, err := os.Stat(n.unitPath("hello.service"))
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("hello.service mode: %v %v", fi.Mode(), err)
	}
	st := n.state()
	if len(st.Units) != 2 || st.Units[0].Name != "hello.service" || st.Units[0].Hook != "hello" || st.Units[0].Incomplete {
		t.Fatalf("state: %+v", st.Units)
	}
	if f := st.Units[0].Files; len(f) != 1 || f[0].Path != "hello.service" || len(f[0].SHA256) != 64 || f[0].Next != "" {
		t.Errorf("state files: %+v", f)
	}
	sfi, err := os.Stat(apply.StatePath(n.opts.StateDirPath()))
	if err != nil || sfi.Mode().Perm() != 0o600 {
		t.Errorf("state file mode: %v %v", sfi.Mode(), err)
	}
}

func TestReapplyDoesNothing(t *testing.T) {
	n := newNode(t)
	n.mustApply(twoHooks)
	p := n.plan(twoHooks)
	if p.HasChanges() || p.Summary() != "No changes." || len(p.Actions) != 0 {
		t.Errorf("re-plan: %s, actions %v", p.Summary(), p.Actions)
	}
	res, calls := n.mustApply(twoHooks)
	checkCalls(t, calls)
	if c := res.Counts; c.Writes != 0 || c.Reloads != 0 || c.Restarts != 0 || c.Unchanged != 2 || c.StateSaves != 0 {
		t.Errorf("counts %+v", c)
	}
}

// TestStateTempFilesSwept: a kill while the state was saved leaves its
// temporary file in the state directory; the next apply removes it, and
// nothing else of the directory.
func TestStateTempFilesSwept(t *testing.T) {
	n := newNode(t)
	n.mustApply("- name: a\n  exec: [/bin/true]\n")
	dir := n.opts.StateDirPath()
	for _, name := range []string{".state.json.tmp-1234567890", "keep.tmp-1", ".other.json.tmp-1"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	n.mustApply("- name: a\n  exec: [/bin/true]\n")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != ".other.json.tmp-1 keep.tmp-1 state.json" {
		t.Errorf("state directory after the apply: %s", got)
	}
}
