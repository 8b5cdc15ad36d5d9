package apply

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/internal/fsutil"
	"github.com/hostprov/hostprov/pkg/compile"
)

// memNode is a node held in memory: the planner's tests plan against it
// with no file system and no systemd. Its entries are keyed by node path;
// the unit directory's are below DefaultUnitDir. A directory is an entry
// of mode fs.ModeDir; "/" always is one.
type memNode struct {
	entries map[string]memEntry
	acc     *accounts
}

type memEntry struct {
	mode  fs.FileMode
	data  string // a file's bytes
	link  string // a symbolic link's target
	ino   uint64
	owner [2]int
}

var _ nodeView = (*memNode)(nil)

func newMemNode() *memNode {
	return &memNode{entries: map[string]memEntry{"/etc": {mode: fs.ModeDir | 0o755, ino: 3}}, acc: &accounts{users: map[string]int{"root": 0}, groups: map[string]int{"root": 0},
		members: map[string][]string{}, homes: map[string]string{}, shadow: map[string]string{}}}
}

// file puts a regular file at p, and the directories above it.
func (m *memNode) file(p, data string, mode fs.FileMode) {
	for d := path.Dir(p); d != "/"; d = path.Dir(d) {
		if _, ok := m.entries[d]; !ok {
			m.entries[d] = memEntry{mode: fs.ModeDir | 0o755, ino: m.ino()}
		}
	}
	m.entries[p] = memEntry{mode: mode, data: data, ino: m.ino()}
}

func (m *memNode) ino() uint64 { return uint64(len(m.entries) + 100) }

func (m *memNode) get(p string) (memEntry, bool) {
	if p == "/" {
		return memEntry{mode: fs.ModeDir | 0o755, ino: 2}, true
	}
	e, ok := m.entries[p]
	return e, ok
}

func (m *memNode) unitFile(rel string) (diskFile, error) {
	e, ok := m.get(path.Join(DefaultUnitDir, rel))
	switch {
	case !ok:
		return diskFile{}, nil
	case e.mode&fs.ModeSymlink != 0:
		return diskFile{exists: true, isLink: true, link: e.link}, nil
	case !e.mode.IsRegular():
		return diskFile{exists: true, bad: rel + " is not a unit file"}, nil
	}
	return diskFile{exists: true, data: []byte(e.data), hash: hashOf([]byte(e.data)), ino: e.ino}, nil
}

func (m *memNode) path(p string) (nodePath, error) {
	var np nodePath
	for d := path.Dir(p); d != "/"; d = path.Dir(d) {
		e, ok := m.get(d)
		switch {
		case !ok:
			np.missing = append([]string{d}, np.missing...)
		case !e.mode.IsDir():
			return nodePath{bad: d + ", a directory on its way, is not a directory"}, nil
		}
	}
	if len(np.missing) > 0 {
		return np, nil
	}
	e, ok := m.get(p)
	if !ok {
		return np, nil
	}
	np.onDisk = onDisk{exists: true, st: fsutil.Stat{Mode: e.mode, UID: e.owner[0], GID: e.owner[1], Ino: e.ino}, link: e.link}
	if e.mode.IsRegular() {
		np.data, np.hash = []byte(e.data), hashOf([]byte(e.data))
	}
	return np, nil
}

func (m *memNode) missingParents(p string) ([]string, error) {
	np, err := m.path(p)
	return np.missing, err
}

func (m *memNode) dirNames(p string) ([]string, error) {
	var names []string
	for q := range m.entries {
		if path.Dir(q) == p {
			names = append(names, path.Base(q))
		}
	}
	slices.Sort(names)
	return names, nil
}

func (m *memNode) accounts(bool) (*accounts, error) { return m.acc, nil }

func (m *memNode) stamps() (*stampDir, error) {
	names, _ := m.dirNames(compile.StampDir)
	return &stampDir{names: names}, nil
}

func (m *memNode) units() (map[string][]nodeEntry, error) {
	idx := map[string][]nodeEntry{}
	for q, e := range m.entries {
		if path.Dir(q) == "/usr/lib/systemd/system" {
			idx[path.Base(q)] = append(idx[path.Base(q)], nodeEntry{path: q, link: e.link})
		}
	}
	return idx, nil
}

func (m *memNode) findTool(name string) (string, error) { return "/usr/bin/" + name, nil }
func (m *memNode) permissions() []Problem               { return nil }

// memPlan plans desired against the node m, with the state st, as NewPlan
// does.
func memPlan(t *testing.T, m *memNode, desired []compile.Unit, st *State, paths ...Path) *Plan {
	t.Helper()
	opts := Options{Root: "/nonexistent-root", node: m, Paths: paths}
	p, err := NewPlan(context.Background(), desired, st, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// planFiles are the node paths of a plan's files with what the plan does to
// them: "op path (reason)".
func planFiles(p *Plan) []string {
	var out []string
	for _, f := range p.Files {
		out = append(out, fmt.Sprintf("%s %s (%s)", f.Op, f.Path, f.Reason))
	}
	return out
}

func yes() *bool { b := true; return &b }

// TestPlanAgainstAMemoryNode plans units and paths against a node held in
// memory: what the plan says follows from what the node has, read through
// nodeView alone (Root names no directory of this machine).
func TestPlanAgainstAMemoryNode(t *testing.T) {
	unit := compile.Unit{Name: "app.service", Contents: []byte("[Service]\nExecStart=/bin/app\n"), Enabled: yes(), HookName: "app"}
	conf := Path{Kind: KindFile, Path: "/etc/app/app.conf", Contents: []byte("x=1\n"), Mode: 0o644, Hook: "app"}
	unitPath := path.Join(DefaultUnitDir, "app.service")
	cases := []struct {
		name  string
		node  func(m *memNode)
		state *State
		want  []string
	}{{
		name: "an empty node gets the unit, the file and the file's directory",
		node: func(*memNode) {},
		want: []string{"add " + unitPath + " (new)", "add /etc/app (new, for what is placed in it)", "add /etc/app/app.conf (new)"},
	}, {
		name: "a unit file that is there already and not hostprov's is a conflict",
		node: func(m *memNode) { m.file(unitPath, "[Service]\nExecStart=/bin/other\n", 0o644) },
		want: []string{"keep " + unitPath + " (this file exists and hostprov did not write it; hostprov never overwrites a file it does not own)",
			"add /etc/app (new, for what is placed in it)", "add /etc/app/app.conf (new)"},
	}, {
		name: "hostprov's unit file edited on the node is drift, left alone",
		node: func(m *memNode) { m.file(unitPath, "[Service]\nExecStart=/bin/edited\n", 0o644) },
		state: &State{Version: StateVersion, UnitDir: DefaultUnitDir, Units: []*StateUnit{{Name: "app.service", Hook: "app",
			Enabled: yes(), Files: []StateFile{{Path: "app.service", SHA256: hashOf(unit.Contents)}}}}},
		want: []string{"keep " + unitPath + " (edited since hostprov wrote it (drift); left alone: put the edit into the hook spec, or run apply with --force to overwrite it)",
			"add /etc/app (new, for what is placed in it)", "add /etc/app/app.conf (new)"},
	}, {
		name: "a file where the path's directory goes is a conflict",
		node: func(m *memNode) { m.file("/etc/app", "not a directory\n", 0o644) },
		want: []string{"add " + unitPath + " (new)",
			"keep /etc/app/app.conf (/etc/app, a directory on its way, is not a directory)"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newMemNode()
			c.node(m)
			p := memPlan(t, m, []compile.Unit{unit}, c.state, conf)
			if got := planFiles(p); !slices.Equal(got, c.want) {
				t.Errorf("files:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// TestPruneAgainstAMemoryNode: a directory hostprov made that now holds a
// file of someone else's is kept when its hook goes, and one that holds
// only what the plan removes goes.
func TestPruneAgainstAMemoryNode(t *testing.T) {
	st := func() *State {
		return &State{Version: StateVersion, UnitDir: DefaultUnitDir, Paths: []*PathState{
			{Path: "/etc/app", Kind: KindDirectory, Hook: "app", Inode: 0},
			{Path: "/etc/app/app.conf", Kind: KindFile, Hook: "app", SHA256: hashOf([]byte("x=1\n"))},
		}}
	}
	for _, c := range []struct {
		name  string
		extra bool
		want  []string
	}{
		{"only hostprov's file in it", false, []string{"remove /etc/app/app.conf (removed from the spec)", "remove /etc/app (removed from the spec)"}},
		{"another file in it", true, []string{"remove /etc/app/app.conf (removed from the spec)", "keep /etc/app (removed from the spec; not empty, so left in place)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newMemNode()
			m.file("/etc/app/app.conf", "x=1\n", 0o644)
			if c.extra {
				m.file("/etc/app/local.conf", "mine\n", 0o644)
			}
			s := st()
			s.Paths[0].Inode = m.entries["/etc/app"].ino
			s.Paths[1].Inode = m.entries["/etc/app/app.conf"].ino
			if got := planFiles(memPlan(t, m, nil, s)); !slices.Equal(got, c.want) {
				t.Errorf("files:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// plannerMayNot are the packages that reach the machine, which the
// planner's files do not import.
var plannerMayNot = map[string]bool{
	`"os"`: true, `"os/exec"`: true, `"syscall"`: true, `"net/http"`: true,
	`"golang.org/x/sys/unix"`: true, `"github.com/hostprov/hostprov/internal/killpoint"`: true,
}

// TestPlannerOnlyReads holds the planner's files to reading the node
// through nodeView: they import no package that reaches the machine, use
// of fsutil only its Owner type, and call no function of the executor's
// files or of the node readers behind diskNode.
func TestPlannerOnlyReads(t *testing.T) {
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	// The functions, and methods of Options, of the executor's files and
	// of the node readers: "name" or "Options.name" -> its file.
	forbidden := map[string]string{}
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
		if !strings.HasPrefix(name, "exec") && !strings.HasPrefix(name, "node") && name != "tools.go" && name != "perm.go" {
			continue
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			switch {
			case !ok || fd.Name.Name == "planNode":
			case fd.Recv == nil:
				forbidden[fd.Name.Name] = name
			case recvType(fd.Recv.List[0].Type) == "Options":
				forbidden["Options."+fd.Name.Name] = name
			}
		}
	}
	planners := 0
	for name, f := range files {
		if !strings.HasPrefix(name, "plan_") {
			continue
		}
		planners++
		for _, imp := range f.Imports {
			if plannerMayNot[imp.Path.Value] {
				t.Errorf("%s imports %s: the planner reads the node only through nodeView", name, imp.Path.Value)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "fsutil" && n.Sel.Name != "Owner" {
					t.Errorf("%s: %s uses fsutil.%s: the planner reads the node only through nodeView", fset.Position(n.Pos()), name, n.Sel.Name)
				}
				if m := "Options." + n.Sel.Name; isOpts(n.X) && forbidden[m] != "" {
					t.Errorf("%s: calls %s of %s: the planner reads the node only through nodeView", fset.Position(n.Pos()), m, forbidden[m])
				}
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok && forbidden[id.Name] != "" {
					t.Errorf("%s: calls %s of %s: the planner reads the node only through nodeView", fset.Position(n.Pos()), id.Name, forbidden[id.Name])
				}
			case *ast.Ident:
				if n.Name == "executor" || n.Name == "diskNode" || n.Name == "nodeFS" {
					t.Errorf("%s: names %s: the planner neither acts nor reads the node but through nodeView", fset.Position(n.Pos()), n.Name)
				}
			}
			return true
		})
	}
	if planners < 5 {
		t.Fatalf("found %d planner files (plan_*.go): run from the package directory", planners)
	}
}

// recvType is the name of a receiver's type.
func recvType(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// isOpts reports whether e is how the planner's code names its Options:
// opts, o or p.opts.
func isOpts(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name == "opts" || e.Name == "o"
	case *ast.SelectorExpr:
		return e.Sel.Name == "opts"
	}
	return false
}
