package compile_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// writeTree writes files (name -> contents) under a new directory and
// returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const storageSpec = header + `- name: app
  exec: [/usr/bin/app]
  files:
    - {path: /etc/app/config.toml, local: conf/config.toml, mode: 0600, user: app, group: "0"}
    - {path: /etc/app/empty, contents: ""}
    - path: /opt/app/bin
      source: https://example.com/app
      verification: {hash: sha256-e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855}
      overwrite: true
  directories: [{path: /var/lib/app, user: "1000"}]
- name: links
  links: [{path: /etc/app/current, target: /opt/app}, {path: /usr/local/bin/app, target: /opt/app/bin, hard: true}]
`

// Build reads local files relative to the spec, applies the default
// modes and keeps every entry's hook and place.
func TestBuildStorage(t *testing.T) {
	dir := writeTree(t, map[string]string{"hooks.yaml": storageSpec, "conf/config.toml": "listen = 9100\n"})
	file := filepath.Join(dir, "hooks.yaml")
	r, diags := compile.Build(file, []byte(storageSpec), compile.Options{})
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	if len(r.Units) != 1 || r.Units[0].Name != "app.service" {
		t.Errorf("units = %v, want app.service alone: a hook with only links has no unit", r.Units)
	}
	st := r.Storage
	if len(st.Files) != 3 || len(st.Directories) != 1 || len(st.Links) != 2 {
		t.Fatalf("storage = %+v", st)
	}
	f := st.Files[0]
	if f.Path != "/etc/app/config.toml" || string(f.Contents) != "listen = 9100\n" || f.Local != "conf/config.toml" ||
		f.Mode != 0o600 || f.User.Name != "app" || f.Group.ID == nil || *f.Group.ID != 0 || f.Hook != 0 || f.Pos.Line != 7 || f.Pos.File != file {
		t.Errorf("files[0] = %+v", f)
	}
	if e := st.Files[1]; e.Contents == nil || len(e.Contents) != 0 || e.Mode != hooks.DefaultFileMode || !e.User.IsZero() {
		t.Errorf("files[1] = %+v, want empty non-nil contents and mode 0644", e)
	}
	if s := st.Files[2]; s.Contents != nil || s.Source != "https://example.com/app" || !strings.HasPrefix(s.Hash, "sha256-") || !s.Overwrite {
		t.Errorf("files[2] = %+v", s)
	}
	if d := st.Directories[0]; d.Mode != hooks.DefaultDirectoryMode || d.User.ID == nil || *d.User.ID != 1000 {
		t.Errorf("directories[0] = %+v", d)
	}
	if l := st.Links[1]; !l.Hard || l.Hook != 1 || l.Pos.Line != 15 {
		t.Errorf("links[1] = %+v", l)
	}
}

// What local: cannot read is refused at the entry, with every other
// problem.
func TestBuildLocalProblems(t *testing.T) {
	outside := writeTree(t, map[string]string{"secret": "s"})
	dir := writeTree(t, map[string]string{"ok": "x", "sub/f": "y"})
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("ok", filepath.Join(dir, "inside")); err != nil {
		t.Fatal(err)
	}
	spec := header + `- name: a
  exec: [/bin/true]
  files:
    - {path: /a, local: missing}
    - {path: /b, local: escape}
    - {path: /c, local: sub}
    - {path: /d, local: inside}
    - {path: /e, contents: "x", verification: {hash: sha256-e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855}}
`
	file := filepath.Join(dir, "hooks.yaml")
	r, diags := compile.Build(file, []byte(spec), compile.Options{})
	want := []string{
		"hooks.yaml:7:25: error: hooks[0].files[0].local: cannot read local missing: no such file or directory",
		"hooks.yaml:8:25: error: hooks[0].files[1].local: local escape is a link to " + filepath.Join(outside, "secret") + ", outside the spec's directory",
		"hooks.yaml:9:25: error: hooks[0].files[2].local: local sub is not a regular file",
		"hooks.yaml:11:54: error: hooks[0].files[4].verification.hash: the file's contents do not have this hash",
		"hint: if the contents are right, write hash: sha256-2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881",
	}
	got := diags.Error()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in:\n%s", w, got)
		}
	}
	if n := len(diags); n != 4 {
		t.Errorf("%d diagnostics, want 4:\n%s", n, got)
	}
	// The link that stays inside is read.
	var found bool
	for _, f := range r.Storage.Files {
		if f.Path == "/d" && bytes.Equal(f.Contents, []byte("x")) {
			found = true
		}
	}
	if !found {
		t.Errorf("local inside (a link to ok) was not read: %+v", r.Storage.Files)
	}
}

// A spec from standard input has no directory for local: to be relative
// to.
func TestBuildLocalFromStdin(t *testing.T) {
	spec := header + "- name: a\n  files: [{path: /a, local: x}]\n"
	_, diags := compile.Build("<stdin>", []byte(spec), compile.Options{})
	if len(diags) != 1 || !strings.Contains(diags[0].String(), "<stdin>:5:29: error: hooks[0].files[0].local: a spec read from standard input has no directory") {
		t.Errorf("diags = %v", diags)
	}
}

// A file where a unit of the spec is written is refused: units are hooks.
func TestBuildFileAtAUnitPath(t *testing.T) {
	spec := header + `- name: app
  exec: [/bin/true]
  dropins: [{name: 10-a.conf, contents: "[Service]\nNice=5\n"}]
  files:
    - {path: /etc/systemd/system/app.service, contents: x}
    - {path: /etc/systemd/system/app.service.d/10-a.conf, contents: x}
    - {path: /etc/systemd/system/other.service, contents: x}
`
	_, diags := compile.Build("t.yaml", []byte(spec), compile.Options{})
	got := diags.Error()
	for _, w := range []string{
		"t.yaml:8:7: error: hooks[0]: file /etc/systemd/system/app.service is where the unit app.service is written",
		"t.yaml:9:7: error: hooks[0]: file /etc/systemd/system/app.service.d/10-a.conf is where the unit app.service is written",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in:\n%s", w, got)
		}
	}
	if len(diags) != 2 {
		t.Errorf("%d diagnostics, want 2:\n%s", len(diags), got)
	}
}

// Entries of one user in two hooks must agree on more than the id.
func TestAccountsDisagree(t *testing.T) {
	_, d := compile.Build("s.yaml", []byte(accountsSpec+"  users: [{name: app, shell: /bin/sh}]\n- name: b\n  users: [{name: app, shell: /bin/bash}]\n"), compile.Options{})
	if len(d) != 1 || !strings.Contains(d[0].String(), "s.yaml:8:11: error: hooks[1].users[0]: user app is written already, with another shell") {
		t.Fatalf("got %v", d)
	}
}
