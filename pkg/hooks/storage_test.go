package hooks

import (
	"strings"
	"testing"
)

// svc starts a hook that renders a unit, so that only its storage is in
// question; its files: and so on start on line 6.
const svc = header + "- name: a\n  exec: [/bin/true]\n"

var (
	sha256Empty = "sha256-e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	sha512Empty = "sha512-cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e"
)

// TestParseStorageDiagnostics: the paths, bytes and modes of files,
// directories and links.
func TestParseStorageDiagnostics(t *testing.T) {
	checkParse(t, []diagCase{
		{"valid", svc + "  files:\n" +
			"    - {path: /etc/a.conf, contents: \"x\\n\", mode: 0600, user: app, group: 0, overwrite: true}\n" +
			"    - {path: /etc/b.conf, local: b.conf, mode: \"0640\"}\n" +
			"    - {path: /opt/c, source: \"https://example.com/c\", verification: {hash: " + sha512Empty + "}, mode: 0o755}\n" +
			"    - {path: /opt/d, source: \"s3://bucket/d\", verification: {hash: " + sha256Empty + "}}\n" +
			"  directories: [{path: /var/lib/a, mode: 0750, user: \"1000\"}]\n" +
			"  links: [{path: /etc/a, target: ../opt/c}, {path: /etc/h, target: /opt/d, hard: true}]\n", nil},
		{"files only", header + "- name: config\n  files: [{path: /etc/x, contents: \"\"}]\n", nil},

		// Paths.
		{"relative path", svc + "  files: [{path: etc/a, contents: x}]\n",
			[]want{{"6:18", "hooks[0].files[0].path", `"etc/a" is not absolute`, "/etc/a", Error}}},
		{"dot dot", svc + "  files: [{path: /etc/../a, contents: x}]\n",
			[]want{{"6:18", "hooks[0].files[0].path", "has a .. element", "", Error}}},
		{"not normalised", svc + "  directories: [{path: /var//lib/}]\n",
			[]want{{"6:24", "hooks[0].directories[0].path", "not normalised", "write /var/lib", Error}}},
		{"root", svc + "  directories: [{path: /}]\n",
			[]want{{"6:24", "hooks[0].directories[0].path", "the root directory", "", Error}}},
		{"no path", svc + "  files: [{contents: x}]\n",
			[]want{{"6:11", "hooks[0].files[0].path", "the file has no path", "", Error}}},

		// Where the bytes come from.
		{"no contents", svc + "  files: [{path: /etc/a}]\n",
			[]want{{"6:11", "hooks[0].files[0]", "none of contents, local and source", "", Error}}},
		{"two sources", svc + "  files: [{path: /etc/a, contents: x, local: a}]\n",
			[]want{{"6:46", "hooks[0].files[0].local", "both contents and local", "exactly one", Error}}},
		{"source without hash", svc + "  files: [{path: /etc/a, source: \"https://example.com/a\"}]\n",
			[]want{{"6:34", "hooks[0].files[0].source", "needs verification.hash", "sha512-HEX", Error}}},
		{"http source", svc + "  files: [{path: /etc/a, source: \"http://example.com/a\", verification: {hash: " + sha256Empty + "}}]\n",
			[]want{{"6:34", "hooks[0].files[0].source", "plain http", "https://", Error}}},
		{"ftp source", svc + "  files: [{path: /etc/a, source: \"ftp://example.com/a\", verification: {hash: " + sha256Empty + "}}]\n",
			[]want{{"6:34", "hooks[0].files[0].source", "not an https:// or s3:// URL", "", Error}}},
		{"bad hash", svc + "  files: [{path: /etc/a, source: \"https://e.com/a\", verification: {hash: md5-abc}}]\n",
			[]want{{"6:74", "hooks[0].files[0].verification.hash", "not a sha256- or sha512- hash", "lower-case hex", Error}}},
		{"hash without algorithm", svc + "  files: [{path: /etc/a, contents: \"\", verification: {hash: " + strings.TrimPrefix(sha256Empty, "sha256-") + "}}]\n",
			[]want{{"6:61", "hooks[0].files[0].verification.hash", "not a sha256- or sha512- hash", "sha256-e3b0", Error}}},
		{"hash at the wrong level", svc + "  files: [{path: /etc/a, contents: x, hash: " + sha256Empty + "}]\n",
			[]want{{"6:39", "hooks[0].files[0].hash", "unknown field", "verification: {hash:", Error}}},
		{"absolute local", svc + "  files: [{path: /etc/a, local: /home/me/a}]\n",
			[]want{{"6:33", "hooks[0].files[0].local", "is an absolute path", "relative to the spec's directory", Error}}},
		{"escaping local", svc + "  files: [{path: /etc/a, local: ../secrets/a}]\n",
			[]want{{"6:33", "hooks[0].files[0].local", "inside the spec's directory", "", Error}}},

		// Modes.
		{"decimal mode", svc + "  files: [{path: /etc/a, contents: x, mode: 420}]\n",
			[]want{{"6:45", "hooks[0].files[0].mode", "not octal", "420 is 0644 written in decimal: write mode: 0644", Error}}},
		{"mode without its 0", svc + "  files: [{path: /etc/a, contents: x, mode: 644}]\n",
			[]want{{"6:45", "hooks[0].files[0].mode", "not octal", "write mode: 0644", Error}}},
		// 0844 has its leading 0; it is the 8 that is not octal.
		{"mode with an 8", svc + "  files: [{path: /etc/a, contents: x, mode: 0844}]\n",
			[]want{{"6:45", "hooks[0].files[0].mode", "mode 0844 is not octal: 8 is not an octal digit", "each digit 0 to 7, such as 0644", Error}}},
		{"mode with a 9 and no 0", svc + "  files: [{path: /etc/a, contents: x, mode: 759}]\n",
			[]want{{"6:45", "hooks[0].files[0].mode", "mode 759 is not octal: 9 is not an octal digit", "each digit 0 to 7, such as 0644", Error}}},
		{"symbolic mode", svc + "  directories: [{path: /a, mode: u+rwx}]\n",
			[]want{{"6:34", "hooks[0].directories[0].mode", "not an octal number", "0755", Error}}},
		{"mode as a list", svc + "  directories: [{path: /a, mode: [7, 5, 5]}]\n",
			[]want{{"6:34", "hooks[0].directories[0].mode", "mode must be an octal number, not a list", "mode: 0755", Error}}},
		{"mode without a value", svc + "  files: [{path: /a, contents: x, mode: }]\n",
			[]want{{"6:35", "hooks[0].files[0].mode", "mode has no value", "0644", Error}}},
		{"mode too large", svc + "  directories: [{path: /a, mode: 017777}]\n",
			[]want{{"6:34", "hooks[0].directories[0].mode", "more than 07777", "", Error}}},
	})
}

// TestParseStorageEntryDiagnostics: owners, links, paths claimed twice,
// mistaken fields, and every problem of entries at once.
func TestParseStorageEntryDiagnostics(t *testing.T) {
	checkParse(t, []diagCase{
		// Owners.
		{"bad user", svc + "  files: [{path: /etc/a, contents: x, user: \"my app\"}]\n",
			[]want{{"6:45", "hooks[0].files[0].user", "not a valid name", "", Error}}},
		{"id out of range", svc + "  directories: [{path: /a, group: 4294967295}]\n",
			[]want{{"6:35", "hooks[0].directories[0].group", "out of range", "", Error}}},

		// Links.
		{"link without target", svc + "  links: [{path: /a}]\n",
			[]want{{"6:11", "hooks[0].links[0].target", "no target", "", Error}}},
		{"relative hard link", svc + "  links: [{path: /a, target: b, hard: true}]\n",
			[]want{{"6:30", "hooks[0].links[0].target", "hard link's target must be an absolute path", "drop hard: true", Error}}},
		{"link owner and overwrite", svc + "  links: [{path: /a, target: b, user: www, group: 33, overwrite: true}]\n", nil},
		{"hard link owner", svc + "  links: [{path: /a, target: /b, hard: true, group: www}]\n",
			[]want{{"6:53", "hooks[0].links[0].group", "a hard link has no owner of its own", "give the owner to the target's file entry", Error}}},
		{"link overwrite not a boolean", svc + "  links: [{path: /a, target: b, overwrite: 1}]\n",
			[]want{{"6:44", "hooks[0].links[0].overwrite", "must be true or false", "", Error}}},

		// Paths claimed twice, and what is below links and files.
		{"a path claimed by two hooks", svc + "  files: [{path: /etc/a, contents: x}]\n- name: b\n  directories: [{path: /etc/a}]\n",
			[]want{{"8:24", "hooks[1].directories[0].path", "/etc/a is claimed already, by the file at hooks[0].files[0]", "line 6", Error}}},
		{"a file and a link", svc + "  files: [{path: /etc/a, contents: x}]\n  links: [{path: /etc/a, target: /b}]\n",
			[]want{{"7:18", "hooks[0].links[0].path", "claimed already, by the file", "", Error}}},
		{"a file under a link", svc + "  links: [{path: /etc/app, target: /opt/app}]\n  files: [{path: /etc/app/config, contents: x}]\n",
			[]want{{"7:18", "hooks[0].files[0].path", "/etc/app/config is under /etc/app, which is the link at hooks[0].links[0] (line 6)", "under the link's target", Error}}},
		{"a file under a file", svc + "  files: [{path: /etc/app, contents: x}, {path: /etc/app/x/y, contents: y}]\n",
			[]want{{"6:49", "hooks[0].files[1].path", "under /etc/app, which is the file", "make /etc/app a directory", Error}}},
		{"a file under a directory", svc + "  directories: [{path: /etc/app}]\n  files: [{path: /etc/app/x, contents: y}]\n", nil},

		// Field mistakes.
		{"unknown field", svc + "  files: [{path: /etc/a, contents: x, mdoe: 0644}]\n",
			[]want{{"6:39", "hooks[0].files[0].mdoe", "unknown field", "did you mean mode?", Error}}},
		{"Butane's inline", svc + "  files: [{path: /etc/a, inline: x}]\n", []want{
			{"6:11", "hooks[0].files[0]", "none of contents", "", Error},
			{"6:26", "hooks[0].files[0].inline", "unknown field", "contents: |", Error},
		}},
		{"files not a list", svc + "  files: {path: /etc/a}\n",
			[]want{{"6:10", "hooks[0].files", "files must be a list", "", Error}}},

		// Every problem at once.
		{"many at once", svc + "  files:\n    - {path: a, contents: x, mode: 420}\n    - {path: /b, source: \"https://e.com/b\"}\n  links: [{path: /c}]\n", []want{
			{"7:14", "hooks[0].files[0].path", "not absolute", "", Error},
			{"7:36", "hooks[0].files[0].mode", "not octal", "", Error},
			{"8:26", "hooks[0].files[1].source", "needs verification.hash", "", Error},
			{"9:11", "hooks[0].links[0].target", "no target", "", Error},
		}},
	})
}

// The fields decode to what they say, with the defaults of mode applied
// later (nil here).
func TestParseStorageValues(t *testing.T) {
	src := svc + "  files:\n" +
		"    - {path: /etc/a.conf, contents: \"x\\n\", mode: 0600, user: app, group: \"0\", overwrite: true}\n" +
		"    - {path: /etc/b.conf, local: conf/b.conf}\n" +
		"  directories: [{path: /var/lib/a, mode: \"0750\"}]\n" +
		"  links: [{path: /etc/h, target: /opt/d, hard: true}]\n"
	spec, diags := Parse("hooks.yaml", []byte(src))
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	h := spec.Hooks[0]
	f := h.Files[0]
	if f.Path != "/etc/a.conf" || f.Contents == nil || *f.Contents != "x\n" || f.Mode == nil || *f.Mode != 0o600 ||
		f.User != "app" || f.Group != "0" || !f.Overwrite {
		t.Errorf("files[0] = %+v", f)
	}
	if g := h.Files[1]; g.Local != "conf/b.conf" || g.Contents != nil || g.Mode != nil {
		t.Errorf("files[1] = %+v", g)
	}
	if d := h.Directories[0]; d.Path != "/var/lib/a" || d.Mode == nil || *d.Mode != 0o750 {
		t.Errorf("directories[0] = %+v", d)
	}
	if l := h.Links[0]; l.Path != "/etc/h" || l.Target != "/opt/d" || !l.Hard {
		t.Errorf("links[0] = %+v", l)
	}
	if p := spec.Where("hooks[0].files[1].local"); p.Line != 8 {
		t.Errorf("files[1].local is at %v, want line 8", p)
	}
}
