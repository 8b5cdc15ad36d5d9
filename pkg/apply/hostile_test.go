package apply_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostprov/hostprov/pkg/apply"
)

// loadStateBounded runs LoadState, and fails the test rather than hang
// for ever when it blocks (as on a FIFO).
func loadStateBounded(t *testing.T, path string) (*apply.State, error) {
	t.Helper()
	type result struct {
		st  *apply.State
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := apply.LoadState(path)
		done <- result{st, err}
	}()
	select {
	case r := <-done:
		return r.st, r.err
	case <-time.After(30 * time.Second):
		t.Fatalf("LoadState(%s) has not returned after 30 s: it blocks", path)
		return nil, nil
	}
}

// TestStateNotARegularFile: a state file that is a link (to a device that
// never ends, to random data, to a file elsewhere), a FIFO, or a file
// larger than any state is refused at once, with what to do, and is never
// read through.
func TestStateNotARegularFile(t *testing.T) {
	plant := map[string]func(path string) error{
		"a link to /dev/zero":    func(p string) error { return os.Symlink("/dev/zero", p) },
		"a link to /dev/urandom": func(p string) error { return os.Symlink("/dev/urandom", p) },
		"a link to a valid state elsewhere": func(p string) error {
			other := filepath.Join(filepath.Dir(p), "..", "elsewhere.json")
			if err := os.WriteFile(other, []byte(`{"version":1,"unitDir":"/etc/systemd/system","units":[]}`), 0o600); err != nil {
				return err
			}
			return os.Symlink(other, p)
		},
		"a FIFO": func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"a file larger than any state": func(p string) error {
			f, err := os.Create(p)
			if err != nil {
				return err
			}
			defer f.Close()
			return f.Truncate(apply.MaxStateSize + 1) // sparse: no disk used
		},
	}
	for what, make := range plant {
		t.Run(what, func(t *testing.T) {
			n := newNode(t)
			path := apply.StatePath(n.opts.StateDirPath())
			if err := make(path); err != nil {
				t.Fatal(err)
			}
			st, err := loadStateBounded(t, path)
			if err == nil {
				t.Fatalf("LoadState accepted %s: %+v", what, st)
			}
			if !strings.Contains(err.Error(), "regular file") || !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not say that the state must be a regular file, or where", err)
			}
		})
	}
}

// TestStateDirSymlinked: a state directory that is a symbolic link is
// refused, naming its target.
func TestStateDirSymlinked(t *testing.T) {
	n := newNode(t)
	real := filepath.Join(n.root, "real-state")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	stateDir := n.opts.StateDirPath()
	if err := os.RemoveAll(stateDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, stateDir); err != nil {
		t.Fatal(err)
	}
	_, err := apply.LoadState(apply.StatePath(stateDir))
	if err == nil || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), "--state-dir") {
		t.Errorf("LoadState through a symlinked state dir: %v; want a refusal that says what to give", err)
	}
}

// TestUnitDirSymlinked: a unit directory that is a symbolic link is not
// followed silently: plan and apply refuse it and name its target, so
// that a user who means it can give that.
func TestUnitDirSymlinked(t *testing.T) {
	n := newNode(t)
	unitDir := n.unitPath("")
	real := filepath.Join(n.root, "real-units")
	if err := os.Rename(unitDir, real); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, unitDir); err != nil {
		t.Fatal(err)
	}
	us, names := spec(t, "- name: a\n  exec: [/bin/true]\n")
	opts := n.opts
	opts.HookNames = names
	_, err := apply.NewPlan(t.Context(), us, n.state(), opts)
	if err == nil || !strings.Contains(err.Error(), "symbolic link to "+real) || !strings.Contains(err.Error(), "--unit-dir "+real) {
		t.Errorf("plan over a symlinked unit dir: %v; want a refusal naming its target", err)
	}
	if ents, _ := os.ReadDir(real); len(ents) != 0 {
		t.Errorf("written into the link's target: %v", ents)
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

// TestPruneDriftHandsOff: a unit of the state whose file is not what
// hostprov wrote (an admin edited it, or the state names a file hostprov
// never wrote) is, when the spec no longer has it, left entirely alone
// without --force: its file, its enablement, its running state. With
// --force it is stopped, disabled and removed.
func TestPruneDriftHandsOff(t *testing.T) {
	const spec = "- name: a\n  exec: [/bin/true]\n- name: b\n  exec: [/bin/true]\n"
	for _, how := range []string{"edited by an admin", "a foreign file under a state entry"} {
		t.Run(how, func(t *testing.T) {
			n := newNode(t)
			n.mustApply(spec)
			edited := "[Service]\nExecStart=/usr/bin/edited\n"
			if how == "a foreign file under a state entry" {
				// The state says hostprov wrote b.service with a hash
				// that is not the file's: the file is someone else's.
				if err := os.Remove(n.unitPath("b.service")); err != nil {
					t.Fatal(err)
				}
				edited = "[Unit]\nDescription=a package's unit\n\n[Service]\nExecStart=/usr/bin/daemon\n\n[Install]\nWantedBy=multi-user.target\n"
			}
			if err := os.WriteFile(n.unitPath("b.service"), []byte(edited), 0o644); err != nil {
				t.Fatal(err)
			}
			p := n.plan("- name: a\n  exec: [/bin/true]\n")
			for _, a := range p.Actions {
				if a.Unit == "b.service" {
					t.Errorf("the plan acts on the drifted unit: %v", a)
				}
			}
			res, calls := n.mustApply("- name: a\n  exec: [/bin/true]\n")
			for _, c := range calls {
				if strings.Contains(c, "b.service") {
					t.Errorf("systemd was asked to %s", c)
				}
			}
			if got := n.read("b.service"); got != edited {
				t.Errorf("b.service changed: %q", got)
			}
			if !n.sd.Enabled("b.service") || !n.sd.Active("b.service") {
				t.Errorf("b.service: enabled %v, active %v; want both left as they were", n.sd.Enabled("b.service"), n.sd.Active("b.service"))
			}
			kept := false
			for _, e := range res.Events {
				kept = kept || e.Unit == "b.service" && e.Action == apply.EvKept
			}
			if !kept {
				t.Errorf("no event says b.service was kept: %+v", res.Events)
			}

			// --force takes it: stopped, disabled, removed.
			_, calls = n.mustApply("- name: a\n  exec: [/bin/true]\n", force)
			if got := join(calls); !strings.Contains(got, "stop b.service") || !strings.Contains(got, "disable b.service") {
				t.Errorf("with --force: %s; want b.service stopped and disabled", got)
			}
			if n.exists("b.service") {
				t.Error("with --force b.service is still there")
			}
		})
	}
}

// TestPruneSameBytesOtherFile: a file with exactly the bytes hostprov
// wrote, but not the file hostprov wrote (a copy put in its place: a
// package's, a restore), is not hostprov's to delete: the hash alone does
// not make it so. Pruning leaves it, and its unit, alone without --force.
func TestPruneSameBytesOtherFile(t *testing.T) {
	const spec = "- name: a\n  exec: [/bin/true]\n- name: b\n  exec: [/bin/true]\n"
	n := newNode(t)
	n.mustApply(spec)
	data := n.read("b.service")
	tmp := n.unitPath(".b.copy")
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, n.unitPath("b.service")); err != nil {
		t.Fatal(err)
	}
	p := n.plan("- name: a\n  exec: [/bin/true]\n")
	for _, a := range p.Actions {
		if a.Unit == "b.service" {
			t.Errorf("the plan acts on b.service: %v", a)
		}
	}
	warned := false
	for _, w := range p.Warnings {
		warned = warned || w.Unit == "b.service" && strings.Contains(w.Message, "not the file hostprov wrote")
	}
	if !warned {
		t.Errorf("no warning says b.service is not the file hostprov wrote: %v", p.Warnings)
	}
	n.mustApply("- name: a\n  exec: [/bin/true]\n")
	if !n.exists("b.service") || !n.sd.Enabled("b.service") {
		t.Errorf("b.service removed or disabled: exists %v, enabled %v", n.exists("b.service"), n.sd.Enabled("b.service"))
	}
	n.mustApply("- name: a\n  exec: [/bin/true]\n", force)
	if n.exists("b.service") {
		t.Error("with --force b.service is still there")
	}
}

// TestStateRecordsInodes: the state records, for every file hostprov
// wrote, the inode of the very file; a re-apply that only re-reads keeps
// them, and a rewrite records the new file's.
func TestStateRecordsInodes(t *testing.T) {
	n := newNode(t)
	n.mustApply("- name: a\n  exec: [/bin/true]\n  dropins:\n  - name: 10-x.conf\n    contents: \"[Service]\\nEnvironment=X=1\\n\"\n")
	check := func(when string) {
		t.Helper()
		for _, u := range n.state().Units {
			for _, f := range u.Files {
				var st syscall.Stat_t
				if err := syscall.Stat(n.unitPath(f.Path), &st); err != nil {
					t.Fatal(err)
				}
				if f.Inode == 0 || f.Inode != st.Ino || f.Next != "" || f.NextInode != 0 {
					t.Errorf("%s: %s recorded with inode %d (next %q, %d), the file's is %d", when, f.Path, f.Inode, f.Next, f.NextInode, st.Ino)
				}
			}
		}
	}
	check("after the first apply")
	n.mustApply("- name: a\n  exec: [/bin/true]\n  dropins:\n  - name: 10-x.conf\n    contents: \"[Service]\\nEnvironment=X=1\\n\"\n")
	check("after an unchanged re-apply")
	n.mustApply("- name: a\n  exec: [/bin/false]\n  dropins:\n  - name: 10-x.conf\n    contents: \"[Service]\\nEnvironment=X=2\\n\"\n")
	check("after a change")
}
