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

// A state of version 1 (no paths) is read, and one is written again
// while no path is recorded; a version 1 state with paths is refused, and
// so is one of version 1 or 2 with owners of sets, or of a version to come.
func TestStateVersions(t *testing.T) {
	st, err := apply.ParseState([]byte(`{"version": 1, "unitDir": "/etc/systemd/system", "units": []}`))
	if err != nil || st.Version != 1 {
		t.Fatalf("version 1: %v %+v", err, st)
	}
	if _, err := apply.ParseState([]byte(`{"version": 1, "units": [], "paths": [{"path": "/etc/a", "kind": "file"}]}`)); err == nil {
		t.Error("a version 1 state with paths was read")
	}
	for name, data := range map[string]string{
		"relative":       `{"version": 2, "units": [], "paths": [{"path": "etc/a", "kind": "file"}]}`,
		"unit-dir":       `{"version": 2, "units": [], "paths": [{"path": "/etc/systemd/system/x.service", "kind": "file"}]}`,
		"kind":           `{"version": 2, "units": [], "paths": [{"path": "/etc/a", "kind": "socket"}]}`,
		"twice":          `{"version": 2, "units": [], "paths": [{"path": "/etc/a", "kind": "file"}, {"path": "/etc/a", "kind": "file"}]}`,
		"version-4":      `{"version": 4, "units": []}`,
		"sets-version-2": `{"version": 2, "units": [], "sets": [{"name": "hosthooks.a", "owner": "agent"}]}`,
		"set-no-owner":   `{"version": 3, "units": [], "sets": [{"name": "hosthooks.a", "owner": ""}]}`,
		"set-twice":      `{"version": 3, "units": [], "sets": [{"name": "a", "owner": "agent"}, {"name": "a", "owner": "x"}]}`,
		"set-name":       `{"version": 3, "units": [], "sets": [{"name": "a/b", "owner": "agent"}]}`,
	} {
		if _, err := apply.ParseState([]byte(data)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestCorruptState(t *testing.T) {
	n := newNode(t)
	path := apply.StatePath(n.opts.StateDirPath())
	for name, data := range map[string]string{
		"garbage":     "{not json",
		"version":     `{"version": 99, "units": []}`,
		"escape":      `{"version": 1, "units": [{"name": "a.service", "files": [{"path": "../../etc/shadow"}]}]}`,
		"other-unit":  `{"version": 1, "units": [{"name": "a.service", "files": [{"path": "b.service"}]}]}`,
		"bad-name":    `{"version": 1, "units": [{"name": "../x.service"}]}`,
		"bad-hash":    `{"version": 1, "units": [{"name": "a.service", "files": [{"path": "a.service", "sha256": "xyz"}]}]}`,
		"unknown-key": `{"version": 1, "units": [], "extra": 1}`,
	} {
		os.WriteFile(path, []byte(data), 0o600)
		_, err := apply.LoadState(path)
		if err == nil || !strings.Contains(err.Error(), "corrupt") || !strings.Contains(err.Error(), "--adopt") {
			t.Errorf("%s: %v", name, err)
		}
	}
	os.Remove(path)
	if st, err := apply.LoadState(path); err != nil || len(st.Units) != 0 {
		t.Errorf("missing state: %v %v", st, err)
	}
}

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
