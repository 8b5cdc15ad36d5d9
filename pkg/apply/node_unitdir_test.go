package apply_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hostprov/hostprov/pkg/apply"
)

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
	us := spec(t, "- name: a\n  exec: [/bin/true]\n")
	_, err := apply.NewPlan(t.Context(), us, n.state(), n.opts)
	if err == nil || !strings.Contains(err.Error(), "symbolic link to "+real) || !strings.Contains(err.Error(), "--unit-dir "+real) {
		t.Errorf("plan over a symlinked unit dir: %v; want a refusal naming its target", err)
	}
	if ents, _ := os.ReadDir(real); len(ents) != 0 {
		t.Errorf("written into the link's target: %v", ents)
	}
}

// dropin is a hook of a unit with one drop-in.
const dropin = "- name: a\n  exec: [/bin/true]\n  dropins:\n  - name: 10-x.conf\n    contents: \"[Service]\\nEnvironment=X=1\\n\"\n"

// TestSymlinkAttacks plants links where hostprov writes and checks that it
// never writes, reads or removes through them.
func TestSymlinkAttacks(t *testing.T) {
	t.Run("symlinked drop-in directory", symlinkedDropinDir)

	t.Run("link planted at a unit path", linkAtUnitPath)

	t.Run("owned file replaced by a link", ownedFileBecameLink)

	// Not files: a directory, a named pipe (which a plain open would
	// block on forever) and a socket are described, never read, and
	// neither written over nor removed.
	t.Run("special files at a unit path", specialFilesAtUnitPath)

	t.Run("names that leave the unit directory", namesLeavingUnitDir)
}

func symlinkedDropinDir(t *testing.T) {
	n := newNode(t)
	outside := t.TempDir()
	os.Symlink(outside, n.unitPath("a.service.d"))
	p := n.plan(dropin, adopt, force)
	if len(p.Conflicts) != 1 || !strings.Contains(p.Conflicts[0].Message, "symbolic link") {
		t.Fatalf("conflicts: %v", p.Conflicts)
	}
	if _, _, err := n.apply(dropin, adopt, force); err == nil {
		t.Fatal("apply wrote into a symlinked drop-in directory")
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("files written outside: %v", ents)
	}
}

func linkAtUnitPath(t *testing.T) {
	n := newNode(t)
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("secret\n"), 0o600)
	os.Symlink(secret, n.unitPath("a.service"))
	p := n.plan(dropin)
	if len(p.Conflicts) != 1 {
		t.Fatalf("conflicts: %v", p.Conflicts)
	}
	for _, f := range p.Files {
		if strings.Contains(string(f.Old), "secret") {
			t.Error("the plan read through the link")
		}
	}
	n.mustApply(dropin, adopt)
	if data, _ := os.ReadFile(secret); string(data) != "secret\n" {
		t.Errorf("wrote through the link: %q", data)
	}
	if fi, _ := os.Lstat(n.unitPath("a.service")); fi.Mode()&os.ModeSymlink != 0 {
		t.Error("the link is still there")
	}
}

func ownedFileBecameLink(t *testing.T) {
	n := newNode(t)
	n.mustApply(dropin)
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("secret\n"), 0o600)
	os.Remove(n.unitPath("a.service.d/10-x.conf"))
	os.Symlink(secret, n.unitPath("a.service.d/10-x.conf"))
	changed := strings.Replace(dropin, "X=1", "X=2", 1)
	p := n.plan(changed)
	if len(p.Warnings) != 1 {
		t.Fatalf("warnings: %v", p.Warnings)
	}
	n.mustApply(changed)
	n.mustApply(changed, force)
	if data, _ := os.ReadFile(secret); string(data) != "secret\n" {
		t.Errorf("wrote through the link: %q", data)
	}
	if got := n.read("a.service.d/10-x.conf"); !strings.Contains(got, "X=2") {
		t.Errorf("drop-in not replaced: %q", got)
	}
	// Pruning removes the link hostprov's file became, not its target.
	os.Remove(n.unitPath("a.service.d/10-x.conf"))
	os.Symlink(secret, n.unitPath("a.service.d/10-x.conf"))
	n.mustApply("", force)
	if _, err := os.Stat(secret); err != nil {
		t.Errorf("the link's target was removed: %v", err)
	}
}

func specialFilesAtUnitPath(t *testing.T) {
	n := newNode(t)
	const three = "- name: d\n  exec: [/bin/true]\n- name: f\n  exec: [/bin/true]\n- name: s\n  exec: [/bin/true]\n"
	if err := os.Mkdir(n.unitPath("d.service"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(n.unitPath("f.service"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: n.unitPath("s.service"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p := n.plan(three, adopt, force)
	var got []string
	for _, c := range p.Conflicts {
		got = append(got, c.Message)
	}
	want := []string{"d.service is a directory, not a unit file; move it away",
		"f.service is a named pipe, not a unit file; move it away",
		"s.service is a socket, not a unit file; move it away"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("conflicts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func namesLeavingUnitDir(t *testing.T) {
	n := newNode(t)
	for _, bad := range []string{"../x.service", "a/b.service"} {
		path := filepath.Join(n.opts.StateDirPath(), "state.json")
		os.WriteFile(path, []byte(`{"version":1,"units":[{"name":"`+bad+`"}]}`), 0o600)
		if _, err := os.Stat(path); err != nil {
			t.Fatal(err)
		}
		st, err := loadStateFile(path)
		if err == nil {
			t.Errorf("state with unit %q accepted: %+v", bad, st)
		}
	}
}
