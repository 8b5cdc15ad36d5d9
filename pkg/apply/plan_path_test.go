package apply_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/hostprov/hostprov/pkg/apply"
)

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
