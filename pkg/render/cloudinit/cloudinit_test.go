package cloudinit_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"github.com/hostprov/hostprov/pkg/render/cloudinit"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/golden"
	"github.com/hostprov/hostprov/internal/hosttools"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render"
	"github.com/hostprov/hostprov/pkg/render/internal/rendertest"
)

// header opens a spec; the tests write its hooks after it.
const header = "apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n"

// cloudConfig is what the tests read back from a #cloud-config document.
type cloudConfig struct {
	WriteFiles []struct {
		Path        string
		Permissions string
		Owner       string
		Encoding    string
		Content     string
	} `yaml:"write_files"`
	Runcmd [][]string
}

func cloudInit(t *testing.T, us []compile.Unit) []byte {
	t.Helper()
	doc, err := cloudinit.Render(us, cloudinit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestCloudInitGolden compares every golden spec's cloud-init output with
// testdata/golden/<case>.cloud-init.yml. The extension is .yml, not .yaml,
// because goldenSpecs takes every testdata/golden/*.yaml for a spec.
func TestCloudInitGolden(t *testing.T) {
	for name, path := range rendertest.GoldenSpecs(t) {
		t.Run(name, func(t *testing.T) {
			doc := cloudInit(t, rendertest.Units(t, path))
			golden.Check(t, rendertest.Path("testdata", "golden", name+".cloud-init.yml"), doc)
		})
	}
}

// TestCloudInitSameBytes reads each golden's cloud-init output back and
// checks that write_files holds exactly the unit files and drop-ins, byte
// for byte, and that runcmd reloads systemd first and only once.
func TestCloudInitSameBytes(t *testing.T) {
	for name, path := range rendertest.GoldenSpecs(t) {
		t.Run(name, func(t *testing.T) {
			us := rendertest.Units(t, path)
			doc := cloudInit(t, us)
			if again := cloudInit(t, rendertest.Units(t, path)); !bytes.Equal(doc, again) {
				t.Fatal("two renders of the same spec differ")
			}
			if !bytes.HasPrefix(doc, []byte("#cloud-config\n")) {
				t.Fatalf("the document does not start with #cloud-config:\n%s", doc)
			}
			cfg := parseCloudConfig(t, doc)
			want := map[string]string{}
			for _, f := range render.Files(us) {
				want[f.Path] = string(f.Contents)
			}
			rendertest.CompareFiles(t, "cloud-init", want, cloudConfigFiles(t, cfg))
			checkRuncmd(t, cfg.Runcmd)
		})
	}
}

func parseCloudConfig(t *testing.T, doc []byte) cloudConfig {
	t.Helper()
	var cfg cloudConfig
	dec := yaml.NewDecoder(bytes.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		t.Fatalf("the output is not the YAML it should be: %v\n%s", err, doc)
	}
	return cfg
}

// cloudConfigFiles returns the unit files of write_files, relative to the
// unit directory, decoded.
func cloudConfigFiles(t *testing.T, cfg cloudConfig) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, f := range cfg.WriteFiles {
		rel, ok := strings.CutPrefix(f.Path, cloudinit.UnitDir+"/")
		if !ok {
			t.Errorf("write_files writes %s, outside %s", f.Path, cloudinit.UnitDir)
		}
		if f.Permissions != "0644" || f.Owner != "root:root" {
			t.Errorf("%s: permissions %q, owner %q; want 0644, root:root", f.Path, f.Permissions, f.Owner)
		}
		content := f.Content
		switch f.Encoding {
		case "":
		case "b64":
			b, err := base64.StdEncoding.DecodeString(content)
			if err != nil {
				t.Fatalf("%s: %v", f.Path, err)
			}
			content = string(b)
		default:
			t.Errorf("%s: encoding %q", f.Path, f.Encoding)
		}
		if _, dup := got[rel]; dup {
			t.Errorf("write_files writes %s twice", f.Path)
		}
		got[rel] = content
	}
	return got
}

// checkRuncmd checks the order of runcmd: one daemon-reload, first, and
// only systemctl commands as argument lists.
func checkRuncmd(t *testing.T, cmds [][]string) {
	t.Helper()
	if len(cmds) == 0 {
		return
	}
	reloads := 0
	for i, c := range cmds {
		if len(c) < 2 || c[0] != "systemctl" {
			t.Errorf("runcmd[%d] = %q: want a systemctl command", i, c)
			continue
		}
		if c[1] == "daemon-reload" {
			reloads++
			if i != 0 {
				t.Errorf("daemon-reload is runcmd[%d]; it must come before any enable, mask or start", i)
			}
		}
		if (c[1] == "enable" || c[1] == "disable") && !slices.Contains(c, "--no-reload") {
			t.Errorf("runcmd[%d] = %q reloads systemd again", i, c)
		}
	}
	if reloads != 1 {
		t.Errorf("runcmd has %d daemon-reloads, want exactly 1: %q", reloads, cmds)
	}
}

// TestCloudInitRuncmd checks what runcmd does with each kind of unit.
func TestCloudInitRuncmd(t *testing.T) {
	spec := `apiVersion: hostprov/v1alpha1
kind: Hooks
hooks:
- name: a
  exec: [/bin/true]
- name: b
  exec: [/bin/true]
  enabled: false
- name: c.service
  mask: true
- name: d
  dropins: [{name: x.conf, contents: "[Service]\nNice=5\n"}]
- name: e.service
  enabled: true
- name: f.service
  enabled: false
- name: w@.service
  useRawName: true
  exec: [/bin/true]
  directives: {Install: [DefaultInstance=one]}
- name: g.timer
  directives: {Timer: [OnCalendar=daily]}
- name: h.service
  useRawManifest: true
  manifest: "[Service]\nExecStart=/bin/true\n"
  enabled: false
- name: i.mount
  useRawName: true
  directives: {Mount: [What=/dev/sdb, Where=/i]}
  wantedBy: []
  enabled: true
- name: j.service
  mask: true
`
	r, diags := compile.Build("t.yaml", []byte(spec), compile.Options{})
	us := r.Units
	if diags.HasErrors(false) {
		t.Fatal(diags)
	}
	cfg := parseCloudConfig(t, cloudInit(t, us))
	want := [][]string{
		{"systemctl", "daemon-reload"},
		{"systemctl", "enable", "--no-reload", "a.service", "w@.service", "g.timer", "i.mount"},
		{"systemctl", "enable", "--no-reload", "e.service"},
		{"systemctl", "disable", "--no-reload", "b.service", "h.service"},
		{"systemctl", "disable", "--no-reload", "f.service"},
		{"systemctl", "mask", "c.service", "j.service"},
		{"systemctl", "stop", "--no-block", "c.service", "j.service"},
		{"systemctl", "try-restart", "--no-block", "d.service"},
		// i.mount has no [Install]: enabling it does nothing at boot, so it
		// is not started here either. w@.service starts as its default
		// instance.
		{"systemctl", "start", "--no-block", "a.service", "e.service", "w@one.service", "g.timer"},
	}
	if diff := cmp.Diff(want, cfg.Runcmd); diff != "" {
		t.Errorf("runcmd (-want +got):\n%s", diff)
	}
	var paths []string
	for _, f := range cfg.WriteFiles {
		paths = append(paths, f.Path)
	}
	wantPaths := []string{
		"/etc/systemd/system/a.service", "/etc/systemd/system/b.service", "/etc/systemd/system/d.service.d/x.conf",
		"/etc/systemd/system/w@.service", "/etc/systemd/system/g.timer", "/etc/systemd/system/h.service",
		"/etc/systemd/system/i.mount",
	}
	if diff := cmp.Diff(wantPaths, paths); diff != "" {
		t.Errorf("write_files paths (-want +got):\n%s", diff)
	}
}

func TestCloudInitEmpty(t *testing.T) {
	doc := cloudInit(t, nil)
	if string(doc) != "#cloud-config\n{}\n" {
		t.Errorf("no units give %q", doc)
	}
}

// TestCloudInitTrickyBytes proves that write_files keeps bytes that YAML
// makes hard to keep.
func TestCloudInitTrickyBytes(t *testing.T) {
	us := rendertest.TrickyUnits()
	doc := cloudInit(t, us)
	want := map[string]string{}
	for _, f := range render.Files(us) {
		want[f.Path] = string(f.Contents)
	}
	rendertest.CompareFiles(t, "cloud-init", want, cloudConfigFiles(t, parseCloudConfig(t, doc)))
	if !bytes.Contains(doc, []byte("content: |\n      [Service]\n      ExecStart=/bin/true\n")) {
		t.Errorf("a plain unit is not a literal block:\n%s", doc)
	}
	if !bytes.Contains(doc, []byte("encoding: b64")) {
		t.Errorf("the unit that is not UTF-8 is not base64:\n%s", doc)
	}
}

// pyWriteFiles loads a #cloud-config document with PyYAML's safe_load, as
// cloud-init does, and prints write_files as JSON. Content goes out as
// base64 of its UTF-8 bytes, so that JSON's escaping cannot hide a
// difference.
const pyWriteFiles = `
import base64, json, sys, yaml
cfg = yaml.safe_load(sys.stdin.buffer.read())
out = {}
for f in cfg.get("write_files", []):
    c = f["content"]
    if f.get("encoding") == "b64":
        c = base64.b64decode(c)
    elif isinstance(c, str):
        c = c.encode("utf-8", "surrogateescape")
    out[f["path"]] = base64.b64encode(c).decode()
json.dump({"files": out, "runcmd": cfg.get("runcmd", [])}, sys.stdout)
`

// pyFiles runs pyWriteFiles on doc.
func pyFiles(t *testing.T, py string, doc []byte) (map[string]string, [][]string) {
	t.Helper()
	var res struct {
		Files  map[string]string
		Runcmd [][]string
	}
	if err := json.Unmarshal(hosttools.RunPython(t, py, pyWriteFiles, doc), &res); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for p, c := range res.Files {
		b, err := base64.StdEncoding.DecodeString(c)
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimPrefix(p, cloudinit.UnitDir+"/")] = string(b)
	}
	return files, res.Runcmd
}

// TestCloudInitPyYAML reads every golden's output, and the tricky units,
// with cloud-init's own YAML parser: the files it would write hold the
// units' bytes, and runcmd is the argument lists hostprov wrote.
func TestCloudInitPyYAML(t *testing.T) {
	py := hosttools.CloudInitPython(t)
	cases := map[string][]compile.Unit{"tricky": rendertest.TrickyUnits()}
	for name, path := range rendertest.GoldenSpecs(t) {
		cases[name] = rendertest.Units(t, path)
	}
	for name, us := range cases {
		t.Run(name, func(t *testing.T) {
			doc := cloudInit(t, us)
			want := map[string]string{}
			for _, f := range render.Files(us) {
				want[f.Path] = string(f.Contents)
			}
			got, runcmd := pyFiles(t, py, doc)
			rendertest.CompareFiles(t, "cloud-init (PyYAML)", want, got)
			if diff := cmp.Diff(parseCloudConfig(t, doc).Runcmd, runcmd); diff != "" {
				t.Errorf("PyYAML reads another runcmd (-yaml.v3 +PyYAML):\n%s", diff)
			}
		})
	}
}

// TestCloudInitSchema runs cloud-init's own validator on every golden's
// output. `cloud-init schema -c FILE` prints "Valid cloud-config: FILE"
// and exits 0 for a valid document; it also exits 0 when it reports
// deprecated keys, on a "Cloud config schema deprecations:" line before
// that. Anything but the one line counts as a failure.
func TestCloudInitSchema(t *testing.T) {
	if _, err := exec.LookPath("cloud-init"); err != nil {
		hosttools.Unavailable(t, "cloud-init not found (Debian package cloud-init)")
	}
	dir := t.TempDir()
	for name, path := range rendertest.GoldenSpecs(t) {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(name, "/", "-")+".yaml")
			if err := os.WriteFile(file, cloudInit(t, rendertest.Units(t, path)), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := rendertest.CloudInitSchema(file)
			if want := "Valid cloud-config: " + file + "\n"; err != nil || out != want {
				t.Errorf("cloud-init schema -c %s: %v\n%s", filepath.Base(file), err, out)
			}
		})
	}
}

// TestCloudInitSchemaFails makes sure that the check above can fail: a
// document cloud-init refuses, and one with a deprecated key.
func TestCloudInitSchemaFails(t *testing.T) {
	if _, err := exec.LookPath("cloud-init"); err != nil {
		hosttools.Unavailable(t, "cloud-init not found (Debian package cloud-init)")
	}
	for name, doc := range map[string]string{
		"invalid":    "#cloud-config\nwrite_files:\n- path: /x\n  permissions: 0644\n",
		"deprecated": "#cloud-config\napt_update: true\n",
	} {
		file := filepath.Join(t.TempDir(), name+".yaml")
		if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := rendertest.CloudInitSchema(file)
		if err == nil && out == "Valid cloud-config: "+file+"\n" {
			t.Errorf("%s: cloud-init schema says only %q", name, out)
		}
	}
}

// TestCloudInitMIME checks the MIME envelope: the same units give the same
// message, and it holds one text/cloud-config part whose body is the
// document, for ASCII documents (7bit) and others (base64).
func TestCloudInitMIME(t *testing.T) {
	for name, us := range map[string][]compile.Unit{
		"swap":   rendertest.Units(t, rendertest.Path("examples", "swap", "hostprov.yaml")),
		"tricky": rendertest.TrickyUnits(),
	} {
		t.Run(name, func(t *testing.T) {
			doc := cloudInit(t, us)
			msg, err := cloudinit.Render(us, cloudinit.Options{MIME: true})
			if err != nil {
				t.Fatal(err)
			}
			again, _ := cloudinit.Render(us, cloudinit.Options{MIME: true})
			if !bytes.Equal(msg, again) {
				t.Fatal("two MIME renders of the same units differ")
			}
			if got := mimeParts(t, msg); len(got) != 1 || got[0] != string(doc) {
				t.Errorf("the MIME message holds %d parts; want the document alone:\n%s", len(got), msg)
			}
		})
	}
}

// mimeParts parses a multipart/mixed message and returns the decoded
// bodies of its text/cloud-config parts; any other part fails the test.
func mimeParts(t *testing.T, msg []byte) []string {
	t.Helper()
	m, err := mail.ReadMessage(bytes.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	if v := m.Header.Get("MIME-Version"); v != "1.0" {
		t.Errorf("MIME-Version %q", v)
	}
	mt, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/mixed" {
		t.Fatalf("Content-Type %q: %v", m.Header.Get("Content-Type"), err)
	}
	r := multipart.NewReader(m.Body, params["boundary"])
	var bodies []string
	for {
		p, err := r.NextRawPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ct, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type")); ct != "text/cloud-config" {
			t.Errorf("a part of type %q", ct)
		}
		body, err := io.ReadAll(p)
		if err != nil {
			t.Fatal(err)
		}
		switch cte := p.Header.Get("Content-Transfer-Encoding"); cte {
		case "7bit":
		case "base64":
			if body, err = base64.StdEncoding.DecodeString(strings.ReplaceAll(string(body), "\r\n", "")); err != nil {
				t.Fatal(err)
			}
		default:
			t.Errorf("Content-Transfer-Encoding %q", cte)
		}
		bodies = append(bodies, string(body))
	}
	return bodies
}

// pyMIME reads user data as cloud-init does (cloudinit.user_data's
// convert_string, then each part's payload decoded as
// util.fully_decoded_payload does) and prints each part's type and base64
// bytes.
const pyMIME = `
import base64, json, sys
from cloudinit import user_data, util
msg = user_data.convert_string(sys.stdin.buffer.read())
parts = []
for part in msg.walk():
    if part.is_multipart():
        continue
    payload = util.fully_decoded_payload(part)
    if isinstance(payload, str):
        payload = payload.encode("utf-8", "surrogateescape")
    parts.append([part.get_content_type(), base64.b64encode(payload).decode()])
json.dump(parts, sys.stdout)
`

// TestCloudInitMIMEPython reads the MIME message with cloud-init's own
// user-data code: it finds one text/cloud-config part holding exactly the
// document, non-ASCII text included.
func TestCloudInitMIMEPython(t *testing.T) {
	py := hosttools.CloudInitPython(t)
	for name, us := range map[string][]compile.Unit{
		"swap":   rendertest.Units(t, rendertest.Path("examples", "swap", "hostprov.yaml")),
		"tricky": rendertest.TrickyUnits(),
	} {
		t.Run(name, func(t *testing.T) {
			doc := cloudInit(t, us)
			msg, err := cloudinit.Render(us, cloudinit.Options{MIME: true})
			if err != nil {
				t.Fatal(err)
			}
			var parts [][2]string
			if err := json.Unmarshal(hosttools.RunPython(t, py, pyMIME, msg), &parts); err != nil {
				t.Fatal(err)
			}
			if len(parts) != 1 || parts[0][0] != "text/cloud-config" {
				t.Fatalf("cloud-init reads the parts %v", parts)
			}
			body, _ := base64.StdEncoding.DecodeString(parts[0][1])
			if !bytes.Equal(body, doc) {
				t.Errorf("cloud-init reads the part as\n%q\nwant\n%q", body, doc)
			}
		})
	}
}

func TestCheckMIME(t *testing.T) {
	if err := cloudinit.CheckMIME("cloud-init"); err != nil {
		t.Errorf("cloud-init: %v", err)
	}
	for _, f := range []string{"ignition", "butane"} {
		err := cloudinit.CheckMIME(f)
		if !errors.Is(err, cloudinit.ErrMIMEForIgnition) || !strings.Contains(err.Error(), "fail") {
			t.Errorf("%s: %v; want ErrMIMEForIgnition", f, err)
		}
	}
	for _, f := range []string{"kops", "units", "dir"} {
		if err := cloudinit.CheckMIME(f); err == nil || errors.Is(err, cloudinit.ErrMIMEForIgnition) {
			t.Errorf("%s: %v; want an error that MIME is only for cloud-init", f, err)
		}
	}
}
