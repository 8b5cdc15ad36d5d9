package apply_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hostprov/hostprov/internal/golden"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/apply/applytest"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
)

var _ = golden.Updating // every test package defines -update

// spec turns hook YAML (the list under "hooks:") into units and the hook
// names, as the CLI does.
func spec(t testing.TB, hooksYAML string) ([]compile.Unit, []string) {
	t.Helper()
	if hooksYAML == "" {
		hooksYAML = " []\n"
	}
	data := []byte("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n" + hooksYAML)
	us, diags := compile.Build("spec.yaml", data)
	if diags.HasErrors(false) {
		t.Fatalf("bad spec: %v", diags)
	}
	sp, _ := hooks.Parse("spec.yaml", data)
	var names []string
	for _, h := range sp.Hooks {
		names = append(names, h.Name)
	}
	return us, names
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
	us, names := spec(n.t, hooksYAML)
	opts := n.opts
	opts.HookNames = names
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
