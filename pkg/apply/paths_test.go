package apply_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/compile"
)

// planStorage plans hooksYAML, files, directories and links included, as
// the CLI does.
func (n *node) planStorage(hooksYAML string, mods ...func(*apply.Options)) (*apply.Plan, error) {
	n.t.Helper()
	if hooksYAML == "" {
		hooksYAML = " []\n"
	}
	data := []byte("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n" + hooksYAML)
	r, diags := compile.BuildAll("spec.yaml", data)
	if diags.HasErrors(false) {
		n.t.Fatalf("bad spec: %v", diags)
	}
	var names []string
	for _, h := range r.Spec.Hooks {
		names = append(names, h.Name)
	}
	opts := n.opts
	opts.HookNames = names
	opts.Paths = apply.PathsOf(r.Storage, names)
	opts.Accounts = apply.AccountsOf(r.Storage, names)
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

const appSpec = `- name: app
  exec: [/usr/bin/app]
  files:
    - {path: /etc/app/config.toml, contents: "listen = 9100\n", mode: 0600, user: app, group: "0"}
  directories: [{path: /var/lib/app, mode: 0750, user: app, group: app}]
  links: [{path: /etc/app/current, target: /opt/app}]
`

func owner(t *testing.T, path string) (uint32, uint32, os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid, fi.Mode()
}

// A hook's file, directory and link are placed with their modes and
// owners (names resolved in the node's /etc/passwd and /etc/group), the
// parent hostprov had to make is recorded, a re-apply changes nothing, a
// changed file restarts the hook's unit, and pruning removes them all.
func TestPathsLifecycle(t *testing.T) {
	needRoot(t)
	n := nodeWithUsers(t)
	p, _ := n.mustApplyStorage(appSpec)
	if a, c, r := p.Counts(); a != 4 || c != 0 || r != 0 {
		t.Errorf("counts = %d %d %d, want 4 added (unit, file, directory, link)", a, c, r)
	}
	if got := n.readNode("/etc/app/config.toml"); got != "listen = 9100\n" {
		t.Errorf("config = %q", got)
	}
	if uid, gid, mode := owner(t, n.at("/etc/app/config.toml")); uid != 1234 || gid != 0 || mode.Perm() != 0o600 {
		t.Errorf("config: %d:%d %v, want 1234:0 0600", uid, gid, mode)
	}
	if uid, gid, mode := owner(t, n.at("/var/lib/app")); uid != 1234 || gid != 1234 || mode.Perm() != 0o750 || !mode.IsDir() {
		t.Errorf("/var/lib/app: %d:%d %v, want a directory 1234:1234 0750", uid, gid, mode)
	}
	if target, err := os.Readlink(n.at("/etc/app/current")); err != nil || target != "/opt/app" {
		t.Errorf("link: %q %v", target, err)
	}
	st := n.state()
	if st.Version != 2 {
		t.Errorf("state version %d, want 2 with paths", st.Version)
	}
	if sp := st.Path("/etc/app"); sp == nil || !sp.Parent || sp.Inode == 0 {
		t.Errorf("/etc/app in the state: %+v, want a parent with its inode", sp)
	}
	if sp := st.Path("/etc/app/config.toml"); sp == nil || sp.Inode == 0 || sp.SHA256 == "" || sp.Hook != "app" {
		t.Errorf("config in the state: %+v", sp)
	}

	again, err := n.planStorage(appSpec)
	if err != nil {
		t.Fatal(err)
	}
	if again.HasChanges() || len(again.Actions) != 0 {
		var b bytes.Buffer
		again.WriteText(&b)
		t.Errorf("re-apply plans changes:\n%s", b.String())
	}

	n.sd.SetActive("app.service", true)
	changed := strings.Replace(appSpec, "9100", "9200", 1)
	p, calls := n.mustApplyStorage(changed)
	if !strings.Contains(join(calls), "restart app.service") {
		t.Errorf("calls = %v, want app.service restarted for its changed file", calls)
	}
	if strings.Contains(join(calls), "reload") {
		t.Errorf("calls = %v: no unit file changed, so no daemon-reload", calls)
	}
	var b bytes.Buffer
	p.WriteText(&b)
	for _, want := range []string{"# change file /etc/app/config.toml (hook app, mode 0600, owner 1234:0, content changed)", "-listen = 9100", "+listen = 9200",
		"restart  app.service  a file of its hook changed: /etc/app/config.toml"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("plan text lacks %q:\n%s", want, b.String())
		}
	}
	j, _ := json.Marshal(p)
	if !strings.Contains(string(j), `"kind":"file"`) || !strings.Contains(string(j), `"hook":"app"`) {
		t.Errorf("plan JSON lacks the file's kind and hook: %s", j)
	}

	p, _ = n.mustApplyStorage("- name: app\n  exec: [/usr/bin/app]\n")
	if a, c, r := p.Counts(); a != 0 || c != 0 || r != 3 {
		t.Errorf("prune counts = %d %d %d, want 3 removed", a, c, r)
	}
	for _, gone := range []string{"/etc/app/config.toml", "/etc/app/current", "/etc/app", "/var/lib/app"} {
		if !n.gone(gone) {
			t.Errorf("%s was not pruned", gone)
		}
	}
	if n.gone("/etc/passwd") {
		t.Error("/etc went with /etc/app")
	}
	if st := n.state(); len(st.Paths) != 0 || st.Version != 1 {
		t.Errorf("state after prune: version %d, paths %+v; want version 1 and none", st.Version, st.Paths)
	}
}

// A file edited on disk is drift: kept and reported, overwritten with
// --force; pruning keeps it too.
func TestPathsDrift(t *testing.T) {
	needRoot(t)
	n := newNode(t)
	spec := "- name: conf\n  files: [{path: /etc/conf.d/a, contents: \"one\\n\"}]\n"
	n.mustApplyStorage(spec)
	n.writeNode("/etc/conf.d/a", "edited\n")
	p, _ := n.mustApplyStorage(strings.Replace(spec, "one", "two", 1))
	if len(p.Warnings) == 0 || !strings.Contains(p.Warnings[len(p.Warnings)-1].Message, "drift") {
		t.Errorf("warnings = %v, want drift", p.Warnings)
	}
	if got := n.readNode("/etc/conf.d/a"); got != "edited\n" {
		t.Errorf("drifted file = %q, overwritten without --force", got)
	}
	p, _ = n.mustApplyStorage("")
	if !strings.Contains(join(warnings(p)), "drift") || n.gone("/etc/conf.d/a") {
		t.Errorf("prune of a drifted file: warnings %v, gone %v; want kept", p.Warnings, n.gone("/etc/conf.d/a"))
	}
	n.mustApplyStorage(strings.Replace(spec, "one", "two", 1), force)
	if got := n.readNode("/etc/conf.d/a"); got != "two\n" {
		t.Errorf("after --force: %q", got)
	}
}

func warnings(p *apply.Plan) []string {
	var s []string
	for _, w := range p.Warnings {
		s = append(s, w.String())
	}
	return s
}

// A file that hostprov did not write is a conflict; overwrite: true
// replaces it, records what it replaced, and pruning leaves it in place.
func TestPathsOverwrite(t *testing.T) {
	needRoot(t)
	n := newNode(t)
	n.writeNode("/etc/motd", "the user's\n")
	spec := "- name: motd\n  files: [{path: /etc/motd, contents: \"hostprov's\\n\"}]\n"
	p, err := n.planStorage(spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Conflicts) != 1 || !strings.Contains(p.Conflicts[0].String(), "overwrite: true") {
		t.Fatalf("conflicts = %v, want one naming overwrite", p.Conflicts)
	}
	if _, err := apply.Execute(context.Background(), p, n.sd, nil); err == nil || n.readNode("/etc/motd") != "the user's\n" {
		t.Fatalf("a plan with a conflict was applied: %v", err)
	}
	n.mustApplyStorage(strings.Replace(spec, "}]", ", overwrite: true}]", 1))
	if got := n.readNode("/etc/motd"); got != "hostprov's\n" {
		t.Errorf("motd = %q", got)
	}
	sp := n.state().Path("/etc/motd")
	if sp == nil || !sp.Existed || sp.PriorSHA256 != hashHex("the user's\n") {
		t.Errorf("state = %+v, want existed with the prior hash", sp)
	}
	n.mustApplyStorage("")
	if n.gone("/etc/motd") {
		t.Error("pruning removed a file that was there before hostprov took it over")
	}
	if n.state().Path("/etc/motd") != nil {
		t.Error("the pruned path is still recorded")
	}
}

func hashHex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// A symbolic link among a path's parents is refused: nothing is written
// where it points.
func TestPathsSymlinkParent(t *testing.T) {
	n := newNode(t)
	elsewhere := t.TempDir()
	if err := os.MkdirAll(n.at("/etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, n.at("/etc/app")); err != nil {
		t.Fatal(err)
	}
	p, err := n.planStorage("- name: app\n  files: [{path: /etc/app/config, contents: x}]\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Conflicts) != 1 || !strings.Contains(p.Conflicts[0].Message, "/etc/app, a directory on its way, is a symbolic link to "+elsewhere) {
		t.Fatalf("conflicts = %v", p.Conflicts)
	}
	if _, err := apply.Execute(context.Background(), p, n.sd, nil); err == nil {
		t.Fatal("applied")
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("written through the link: %v", ents)
	}
}

// A user the node does not know is an error of the plan that names the
// hook and the entry's place.
func TestPathsUnknownUser(t *testing.T) {
	n := nodeWithUsers(t)
	_, err := n.planStorage("- name: app\n  files: [{path: /etc/a, contents: x, user: nobody-here}]\n")
	if err == nil || !strings.Contains(err.Error(), "spec.yaml:") || !strings.Contains(err.Error(), "hook app") ||
		!strings.Contains(err.Error(), `user "nobody-here" is not in the node's /etc/passwd`) {
		t.Fatalf("err = %v", err)
	}
}

// A hard link is the file it links to; when that file is rewritten (a new
// inode, since files are replaced by rename), the link is made again.
func TestPathsHardLink(t *testing.T) {
	needRoot(t)
	n := newNode(t)
	spec := "- name: tool\n  files: [{path: /opt/tool/bin, contents: \"v1\\n\", mode: 0755}]\n  links: [{path: /usr/bin/tool, target: /opt/tool/bin, hard: true}, {path: /etc/tool, target: /opt/tool}]\n"
	n.mustApplyStorage(spec)
	ino := func(p string) uint64 {
		fi, err := os.Lstat(n.at(p))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	if ino("/usr/bin/tool") != ino("/opt/tool/bin") {
		t.Fatal("the hard link is not the file")
	}
	if p, err := n.planStorage(spec); err != nil || p.HasChanges() {
		t.Fatalf("re-plan: %v, changes %v", err, p != nil && p.HasChanges())
	}
	p, _ := n.mustApplyStorage(strings.Replace(spec, "v1", "v2", 1))
	if got := n.readNode("/usr/bin/tool"); got != "v2\n" || ino("/usr/bin/tool") != ino("/opt/tool/bin") {
		t.Errorf("after the file changed, the link has %q and is the file: %v", got, ino("/usr/bin/tool") == ino("/opt/tool/bin"))
	}
	var b bytes.Buffer
	p.WriteText(&b)
	if !strings.Contains(b.String(), "# change link /usr/bin/tool -> /opt/tool/bin (hook tool, its target is rewritten)") {
		t.Errorf("plan:\n%s", b.String())
	}
	if ents, _ := os.ReadDir(n.at("/usr/bin")); len(ents) != 1 {
		t.Errorf("/usr/bin holds %v, want the link alone (no temporary file)", ents)
	}
	n.mustApplyStorage("")
	for _, p := range []string{"/usr/bin/tool", "/etc/tool", "/opt/tool/bin", "/opt/tool", "/opt", "/usr/bin", "/usr"} {
		if !n.gone(p) {
			t.Errorf("%s not pruned", p)
		}
	}
}

// An apply that dies at any file operation, and then one that runs to the
// end, leave the node as the spec says, every path recorded, and no
// temporary file beside them.
func TestPathsCrash(t *testing.T) {
	needRoot(t)
	const v1 = "- name: app\n  exec: [/usr/bin/app]\n  files: [{path: /etc/app/a, contents: \"1\\n\"}, {path: /etc/app/b, contents: \"1\\n\"}]\n  links: [{path: /etc/app/l, target: a}]\n"
	v2 := strings.ReplaceAll(v1, `"1\n"`, `"2\n"`) + "  directories: [{path: /srv/app}]\n"
	planted := 0
	for step := 1; step < 20; step++ {
		n := newNode(t)
		n.mustApplyStorage(v1)
		p, err := n.planStorage(v2)
		if err != nil {
			t.Fatal(err)
		}
		crash := &crashFiles{n: step}
		if _, err := apply.ExecuteWith(context.Background(), p, n.sd, nil, crash); err == nil {
			if step < 3 {
				t.Errorf("step %d: no file operation failed", step)
			}
			continue
		}
		// What a kill while writing leaves, and a failing operation
		// does not.
		if interrupted(n.state()) {
			n.writeNode("/etc/app/.a.tmp-0123456789abcdef", "half")
			planted++
		}
		n.mustApplyStorage(v2)
		if a, b := n.readNode("/etc/app/a"), n.readNode("/etc/app/b"); a != "2\n" || b != "2\n" || n.gone("/srv/app") {
			t.Errorf("step %d: a=%q b=%q, /srv/app gone %v", step, a, b, n.gone("/srv/app"))
		}
		if again, err := n.planStorage(v2); err != nil || again.HasChanges() || len(again.Warnings) > 0 {
			var b bytes.Buffer
			again.WriteText(&b)
			t.Errorf("step %d: the apply after the crash did not converge: %v\n%s", step, err, b.String())
		}
		ents, _ := os.ReadDir(n.at("/etc/app"))
		if len(ents) != 3 {
			t.Errorf("step %d: /etc/app holds %v, want a, b and l alone", step, ents)
		}
	}
	if planted == 0 {
		t.Error("no crash left an interrupted apply of the paths")
	}
}

func interrupted(st *apply.State) bool {
	for _, sp := range st.Paths {
		if sp.Next != "" {
			return true
		}
	}
	return false
}

// A path that another spec set owns is a conflict of the set that places
// it too, and pruning one set leaves the other's paths alone.
func TestPathsSets(t *testing.T) {
	needRoot(t)
	n := newNode(t)
	set := func(name, hooksYAML string) apply.SpecSet {
		data := []byte("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n" + hooksYAML)
		r, diags := compile.BuildAll(name+".yaml", data)
		if diags.HasErrors(false) {
			t.Fatal(diags)
		}
		var names []string
		for _, h := range r.Spec.Hooks {
			names = append(names, h.Name)
		}
		return apply.SpecSet{Name: name, Units: r.Units, HookNames: names, Paths: apply.PathsOf(r.Storage, names)}
	}
	applySets := func(sets ...apply.SpecSet) *apply.Plan {
		t.Helper()
		p, err := apply.NewPlanSets(context.Background(), sets, n.state(), n.opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Conflicts) == 0 {
			if _, err := apply.Execute(context.Background(), p, n.sd, nil); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	applySets(set("a", "- name: a\n  files: [{path: /etc/shared, contents: a}]\n"))
	applySets(set("b", "- name: b\n  files: [{path: /etc/b, contents: b}]\n"))
	p := applySets(set("b", "- name: b\n  files: [{path: /etc/shared, contents: b}]\n"))
	if len(p.Conflicts) != 1 || !strings.Contains(p.Conflicts[0].Message, "spec set a owns it") {
		t.Errorf("conflicts = %v", p.Conflicts)
	}
	if n.readNode("/etc/shared") != "a" || n.readNode("/etc/b") != "b" {
		t.Error("a conflicting plan changed files")
	}
	applySets(set("b", " []\n"))
	if !n.gone("/etc/b") || n.gone("/etc/shared") {
		t.Errorf("pruning set b: /etc/b gone %v, /etc/shared gone %v", n.gone("/etc/b"), n.gone("/etc/shared"))
	}
}

// A path whose kind the spec changes (a file, now a link) is a conflict
// that says how to get there, not drift.
func TestPathsKindChange(t *testing.T) {
	needRoot(t)
	n := newNode(t)
	n.mustApplyStorage("- name: a\n  files: [{path: /etc/a, contents: x}]\n")
	p, err := n.planStorage("- name: a\n  links: [{path: /etc/a, target: /etc/b}]\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Conflicts) != 1 || !strings.Contains(p.Conflicts[0].Message, "hostprov placed a file here, and the spec now has a link") {
		t.Errorf("conflicts = %v", p.Conflicts)
	}
}

// A symbolic link's owner is set on the link itself (never on what it
// points to), shown in the plan, and checked again: a link of the right
// target and another owner is made again. overwrite: true lets a link
// replace a file hostprov did not place, which is a conflict without it.
func TestPathsLinkOwnerOverwrite(t *testing.T) {
	needRoot(t)
	n := newNode(t)
	n.writeNode("/opt/app/v1", "v1\n")
	n.writeNode("/etc/app/current", "the user's\n")
	spec := "- name: app\n  links: [{path: /etc/app/current, target: /opt/app/v1, user: 1501, group: 1502}]\n"
	p, err := n.planStorage(spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Conflicts) != 1 || !strings.Contains(p.Conflicts[0].String(), "overwrite: true") {
		t.Fatalf("conflicts = %v, want one naming overwrite", p.Conflicts)
	}
	spec = strings.Replace(spec, "}]", ", overwrite: true}]", 1)
	p, _ = n.mustApplyStorage(spec)
	var b strings.Builder
	p.WriteText(&b)
	if !strings.Contains(b.String(), "owner 1501:1502") {
		t.Errorf("the plan does not show the link's owner:\n%s", b.String())
	}
	if target, err := os.Readlink(n.at("/etc/app/current")); err != nil || target != "/opt/app/v1" {
		t.Fatalf("link = %q, %v", target, err)
	}
	if u, g := n.owner("/etc/app/current"); u != 1501 || g != 1502 {
		t.Errorf("the link is owned by %d:%d, want 1501:1502", u, g)
	}
	if u, g := n.owner("/opt/app/v1"); u != 0 || g != 0 {
		t.Errorf("the link's target was given its owner: %d:%d", u, g)
	}
	if sp := n.state().Path("/etc/app/current"); sp == nil || !sp.Existed {
		t.Errorf("state = %+v, want a link that replaced what existed", sp)
	}
	p, _ = n.mustApplyStorage(spec)
	for _, f := range p.Files {
		if f.Path == "/etc/app/current" && f.Op != apply.OpUnchanged {
			t.Errorf("second apply: %s %s (%s)", f.Op, f.Path, f.Reason)
		}
	}
	if err := os.Lchown(n.at("/etc/app/current"), 0, 0); err != nil {
		t.Fatal(err)
	}
	p, _ = n.mustApplyStorage(spec)
	if u, g := n.owner("/etc/app/current"); u != 1501 || g != 1502 {
		t.Errorf("a changed owner was not set again: %d:%d", u, g)
	}
}
