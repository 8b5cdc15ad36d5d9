package apply_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hostprov/hostprov/internal/golden"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/apply/applytest"
	"github.com/hostprov/hostprov/pkg/compile"
)

var _ = golden.Updating // every test package defines -update

// spec turns hook YAML (the list under "hooks:") into units, as the CLI
// does.
func spec(t testing.TB, hooksYAML string) []compile.Unit {
	t.Helper()
	if hooksYAML == "" {
		hooksYAML = " []\n"
	}
	data := []byte("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n" + hooksYAML)
	r, diags := compile.Build("spec.yaml", data, compile.Options{})
	us := r.Units
	if diags.HasErrors(false) {
		t.Fatalf("bad spec: %v", diags)
	}
	return us
}

// node is a node's file system in a temp dir, with a fake systemd.
type node struct {
	t    testing.TB
	root string
	sd   *applytest.Fake
	opts apply.Options
}

func newNode(t testing.TB) *node {
	root := t.TempDir()
	n := &node{t: t, root: root, sd: applytest.New(), opts: apply.Options{Root: root}}
	n.sd.UnitDir = n.unitPath("")
	if err := apply.PrepareDirs(n.opts); err != nil {
		t.Fatal(err)
	}
	return n
}

func (n *node) unitPath(rel string) string {
	return filepath.Join(n.root, "etc/systemd/system", rel)
}

func (n *node) state() *apply.State {
	n.t.Helper()
	st, err := apply.LoadState(apply.StatePath(n.opts.StateDirPath()))
	if err != nil {
		n.t.Fatal(err)
	}
	return st
}

// plan plans hooksYAML with the node's options changed by mods.
func (n *node) plan(hooksYAML string, mods ...func(*apply.Options)) *apply.Plan {
	n.t.Helper()
	us := spec(n.t, hooksYAML)
	opts := n.opts
	for _, m := range mods {
		m(&opts)
	}
	p, err := apply.NewPlan(context.Background(), us, n.state(), opts)
	if err != nil {
		n.t.Fatal(err)
	}
	return p
}

// apply plans and applies, and returns the calls systemd got.
func (n *node) apply(hooksYAML string, mods ...func(*apply.Options)) (*apply.Result, []string, error) {
	n.t.Helper()
	return n.applyWith(apply.OSFiles, hooksYAML, mods...)
}

func (n *node) applyWith(files apply.FileOps, hooksYAML string, mods ...func(*apply.Options)) (*apply.Result, []string, error) {
	n.t.Helper()
	p := n.plan(hooksYAML, mods...)
	n.sd.Reset()
	res, err := apply.ExecuteWith(context.Background(), p, n.sd, nil, files)
	return res, n.sd.Log(), err
}

// mustApply applies and fails the test on an error.
func (n *node) mustApply(hooksYAML string, mods ...func(*apply.Options)) (*apply.Result, []string) {
	n.t.Helper()
	res, calls, err := n.apply(hooksYAML, mods...)
	if err != nil {
		n.t.Fatalf("apply: %v", err)
	}
	return res, calls
}

func (n *node) read(rel string) string {
	n.t.Helper()
	data, err := os.ReadFile(n.unitPath(rel))
	if err != nil {
		n.t.Fatal(err)
	}
	return string(data)
}

func (n *node) exists(rel string) bool {
	_, err := os.Lstat(n.unitPath(rel))
	return err == nil
}

func adopt(o *apply.Options)   { o.Adopt = true }
func force(o *apply.Options)   { o.Force = true }
func noPrune(o *apply.Options) { o.NoPrune = true }

func join(s []string) string { return strings.Join(s, "; ") }

func loadStateFile(path string) (*apply.State, error) { return apply.LoadState(path) }

const twoHooks = `
- name: hello
  exec: [/bin/echo, hello]
- name: prep
  type: oneshot
  exec: [/bin/true]
`

func checkCalls(t *testing.T, got []string, want ...string) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("systemd calls (-want +got):\n%s", diff)
	}
}

// planStorage plans hooksYAML, files, directories and links included, as
// the CLI does.
func (n *node) planStorage(hooksYAML string, mods ...func(*apply.Options)) (*apply.Plan, error) {
	n.t.Helper()
	if hooksYAML == "" {
		hooksYAML = " []\n"
	}
	data := []byte("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n" + hooksYAML)
	r, diags := compile.Build("spec.yaml", data, compile.Options{})
	if diags.HasErrors(false) {
		n.t.Fatalf("bad spec: %v", diags)
	}
	opts := n.opts
	opts.Paths = apply.PathsOf(r.Storage, r.Spec)
	opts.Accounts = apply.AccountsOf(r.Storage, r.Spec)
	for _, m := range mods {
		m(&opts)
	}
	return apply.NewPlan(context.Background(), r.Units, n.state(), opts)
}

func (n *node) applyStorage(hooksYAML string, mods ...func(*apply.Options)) (*apply.Plan, []string, error) {
	n.t.Helper()
	p, err := n.planStorage(hooksYAML, mods...)
	if err != nil {
		n.t.Fatalf("plan: %v", err)
	}
	n.sd.Reset()
	_, err = apply.Execute(context.Background(), p, n.sd, nil)
	return p, n.sd.Log(), err
}

func (n *node) mustApplyStorage(hooksYAML string, mods ...func(*apply.Options)) (*apply.Plan, []string) {
	n.t.Helper()
	p, calls, err := n.applyStorage(hooksYAML, mods...)
	if err != nil {
		n.t.Fatalf("apply: %v", err)
	}
	return p, calls
}

// at is the path on this machine of a node path.
func (n *node) at(p string) string { return filepath.Join(n.root, p) }

func (n *node) writeNode(p, data string) {
	n.t.Helper()
	if err := os.MkdirAll(filepath.Dir(n.at(p)), 0o755); err != nil {
		n.t.Fatal(err)
	}
	if err := os.WriteFile(n.at(p), []byte(data), 0o644); err != nil {
		n.t.Fatal(err)
	}
}

func (n *node) readNode(p string) string {
	n.t.Helper()
	data, err := os.ReadFile(n.at(p))
	if err != nil {
		n.t.Fatal(err)
	}
	return string(data)
}

func (n *node) gone(p string) bool {
	_, err := os.Lstat(n.at(p))
	return os.IsNotExist(err)
}

// nodeWithUsers is a node whose /etc/passwd and /etc/group know app (uid
// and gid 1234).
func nodeWithUsers(t *testing.T) *node {
	n := newNode(t)
	n.writeNode("/etc/passwd", "root:x:0:0::/root:/bin/sh\napp:x:1234:1234::/var/lib/app:/sbin/nologin\n")
	n.writeNode("/etc/group", "root:x:0:\napp:x:1234:\n")
	return n
}

func needRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("this test needs root (chown) and CI=true")
		}
		t.Skip("needs root to chown")
	}
}

func owner(t *testing.T, path string) (uint32, uint32, os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid, fi.Mode()
}

func hashHex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func (n *node) owner(p string) (int, int) {
	n.t.Helper()
	fi, err := os.Lstat(n.at(p))
	if err != nil {
		n.t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return int(st.Uid), int(st.Gid)
}
