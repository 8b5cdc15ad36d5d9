package importer_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hostprov/hostprov/internal/corpus"
	"github.com/hostprov/hostprov/internal/hosttools"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/importer"
	"github.com/hostprov/hostprov/pkg/render"
	"github.com/hostprov/hostprov/pkg/render/cloudinit"
)

// pyFiles reads two cloud-configs (a JSON list of their texts on stdin)
// with cloud-init's own YAML loading and write_files decoding
// (cc_write_files: extract_contents for the encodings, decode_perms for
// the mode), and prints, for each, the files by path (bytes as base64,
// mode, owner) and the users and groups as cloud-init reads them.
const pyFiles = `
import base64, json, sys, yaml
from cloudinit.config import cc_write_files as w
out = []
for text in json.load(sys.stdin):
    doc = yaml.safe_load(text) or {}
    files = {}
    for f in doc.get("write_files") or []:
        data = w.extract_contents(f.get("content", ""), w.canonicalize_extraction(f.get("encoding")))
        if isinstance(data, str):
            data = data.encode()
        files[f["path"]] = {"bytes": base64.b64encode(data).decode(), "mode": w.decode_perms(f.get("permissions"), 0o644),
                            "owner": f.get("owner", "root:root"), "append": bool(f.get("append", False))}
    users = {}
    for u in doc.get("users") or []:
        if isinstance(u, dict):
            g = u.get("groups") or []
            if isinstance(g, str):
                g = [x.strip() for x in g.split(",") if x.strip()]
            users[u["name"]] = {"system": bool(u.get("system")), "homedir": u.get("homedir"), "shell": u.get("shell"), "groups": g}
    groups = []
    for g in doc.get("groups") or []:
        groups += list(g.keys()) if isinstance(g, dict) else [g]
    out.append({"files": files, "users": users, "groups": sorted(groups)})
json.dump(out, sys.stdout)
`

type ccData struct {
	Files  map[string]map[string]any `json:"files"`
	Users  map[string]map[string]any `json:"users"`
	Groups []string                  `json:"groups"`
}

// pyCloudConfig reads cloud-configs (a JSON list of their texts on stdin)
// with cloud-init's own YAML loading and write_files decoding, and prints
// each as the data cloud-init acts on: write_files by path (bytes as
// base64, the mode decode_perms gives, owner, and the entry's other
// fields), users by name (the distribution's default user as "default";
// groups as a list; lock_passwd, true unless false, only with a hash),
// groups by name with their members, and every other module as it is.
const pyCloudConfig = `
import base64, json, sys, yaml
from cloudinit.config import cc_write_files as w
out = []
for text in json.load(sys.stdin):
    doc = yaml.safe_load(text) or {}
    files = {}
    for f in doc.pop("write_files", None) or []:
        data = w.extract_contents(f.get("content", ""), w.canonicalize_extraction(f.get("encoding")))
        if isinstance(data, str):
            data = data.encode()
        e = {k: v for k, v in f.items() if k not in ("path", "content", "encoding", "permissions", "owner")}
        e.update({"bytes": base64.b64encode(data).decode(), "mode": w.decode_perms(f.get("permissions"), 0o644),
                  "owner": f.get("owner", "root:root"), "append": bool(f.get("append", False)), "defer": bool(f.get("defer", False))})
        files[f["path"]] = e
    users = {}
    for u in doc.pop("users", None) or []:
        if not isinstance(u, dict):
            users[str(u)] = {}
            continue
        u = dict(u)
        g = u.get("groups") or []
        if isinstance(g, str):
            g = [x.strip() for x in g.split(",") if x.strip()]
        u["groups"] = g
        if not (u.get("hashed_passwd") or u.get("passwd")):
            u.pop("lock_passwd", None)
        elif "lock_passwd" not in u:
            u["lock_passwd"] = True
        users[u.pop("name")] = u
    groups = {}
    for g in doc.pop("groups", None) or []:
        for name, members in (g.items() if isinstance(g, dict) else [(g, [])]):
            if isinstance(members, str):
                members = [members]
            groups[name] = sorted(set(groups.get(name, []) + list(members or [])))
    out.append({"files": files, "users": users, "groups": groups, "other": doc})
json.dump(out, sys.stdout, default=str)
`

// TestCloudConfigRoundTrip: a cloud-config imported, then rendered with
// --format cloud-init and its leftovers merged (render --merge REST), is
// the original as cloud-init reads both (pyCloudConfig): the project's
// own (its input golden, and every cloud-config render's goldens hold),
// and every cloud-config of the shared corpus that import takes. The
// one addition hostprov makes is the distribution's default user, which
// its users: keeps. What cloud-init's schema check accepts of the
// original it accepts of the round trip. A corpus file import refuses
// must be refused with an error at a place in it.
func TestCloudConfigRoundTrip(t *testing.T) {
	py := hosttools.CloudInitPython(t)
	inputs := []string{filepath.Join("testdata", "in", "web.cloud-config.yaml")}
	shared, _ := filepath.Glob(filepath.Join(corpus.Path("cloudinit"), "*"))
	inputs = append(inputs, shared...)
	// The project's own: what render writes for cloud-init.
	own, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "golden", "*.cloud-init.yml"))
	own2, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "golden", "*", "*.cloud-init.yml"))
	inputs = append(append(inputs, own...), own2...)
	var compared, rest, refused, valid int
	for _, file := range inputs {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := corpus.Strip(data)
			if bytes.HasPrefix(data, []byte("#cloud-config")) && !bytes.HasPrefix(body, []byte("#cloud-config")) {
				body = append([]byte("#cloud-config\n"), body...)
			}
			res, diags := importer.Import(importer.Input{Name: filepath.Base(file), Data: body, Locals: true})
			if res == nil {
				if !diags.HasErrors(false) || diags[0].Pos.Line == 0 {
					t.Fatalf("refused without an error at a line:\n%s", diags.Error())
				}
				refused++
				return
			}
			if res.Format != importer.FormatCloudConfig {
				t.Skipf("a %s config, not a cloud-config", res.Format)
			}
			r, bad := compile.Build(res.Name+".yaml", res.Spec, compile.Options{Locals: res.Locals})
			if bad.HasErrors(false) {
				t.Fatal(bad.Error())
			}
			var merge []render.MergeFile
			if res.Rest != nil {
				merge = append(merge, render.MergeFile{Name: "leftovers", Data: res.Rest})
				rest++
			}
			opts := cloudinit.Options{Storage: r.Storage}
			own, err := cloudinit.Render(r.Units, opts)
			if err != nil {
				t.Fatal(err)
			}
			out, mdiags, err := cloudinit.Merge(own, r.Units, opts, merge)
			if err != nil || mdiags.HasErrors(false) {
				t.Fatalf("render --merge of the leftovers: %v\n%s\nleftovers:\n%s", err, mdiags.Error(), res.Rest)
			}
			in, _ := json.Marshal([]string{string(body), string(out)})
			var both []map[string]any
			if err := json.Unmarshal(hosttools.RunPython(t, py, pyCloudConfig, in), &both); err != nil {
				t.Fatal(err)
			}
			want, got := both[0], both[1]
			if users, _ := got["users"].(map[string]any); users != nil {
				if _, ok := want["users"].(map[string]any)["default"]; !ok {
					delete(users, "default")
				}
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("import, render --merge of the leftovers differs from the original as cloud-init reads both (-original +rendered):\n%s\nrendered:\n%s\nleftovers:\n%s", d, out, res.Rest)
			}
			compared++
			// What cloud-init's schema accepts of the original, it
			// accepts of the round trip.
			if schemaValid(t, body) {
				valid++
				if !schemaValid(t, out) {
					t.Errorf("cloud-init schema accepts the original, but not the round trip:\n%s", out)
				}
			}
		})
	}
	t.Logf("%d cloud-configs round-tripped, %d of them with leftovers, %d of them valid to cloud-init's schema and so the round trip; %d refused with an error at a line",
		compared, rest, valid, refused)
}

// schemaValid reports whether cloud-init's own schema check (cloud-init
// schema -c) accepts a cloud-config.
func schemaValid(t *testing.T, doc []byte) bool {
	t.Helper()
	file := filepath.Join(t.TempDir(), "user-data")
	if err := os.WriteFile(file, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "cloud-init", "schema", "-c", file)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"}
	out, err := cmd.CombinedOutput()
	return err == nil && strings.HasPrefix(string(out), "Valid cloud-config")
}

// TestCloudConfigIntegerPermissions: cloud-init reads permissions that
// YAML gives as a decimal integer (600, unquoted) as that number, so 600
// is mode 01130 to it; import keeps the octal the digits say and warns at
// the value, naming both. A quoted or 0-led mode is the same to both and
// passes without a word. What cloud-init applies is asked of its own
// write_files code.
func TestCloudConfigIntegerPermissions(t *testing.T) {
	py := hosttools.CloudInitPython(t)
	data := "#cloud-config\nwrite_files:\n" +
		"  - {path: /etc/int, content: x, permissions: 600}\n" +
		"  - {path: /etc/quoted, content: x, permissions: '600'}\n" +
		"  - {path: /etc/octal, content: x, permissions: 0600}\n" +
		"  - {path: /etc/decimal, content: x, permissions: 384}\n"
	in, _ := json.Marshal([]string{data})
	var cc []ccData
	if err := json.Unmarshal(hosttools.RunPython(t, py, pyFiles, in), &cc); err != nil {
		t.Fatal(err)
	}
	res, diags := importer.Import(importer.Input{Name: "perm.cfg", Data: []byte(data)})
	if res == nil {
		t.Fatal(diags.Error())
	}
	kept := map[string]uint32{}
	for _, h := range res.Hooks {
		for _, f := range h.Files {
			kept[f.Path] = hooks.DefaultFileMode
			if f.Mode != nil {
				kept[f.Path] = *f.Mode
			}
		}
	}
	warned := map[int]string{}
	for _, d := range diags {
		if d.Severity == hooks.Warning && strings.Contains(d.Path, "permissions") {
			warned[d.Pos.Line] = d.String()
		}
	}
	for i, path := range []string{"/etc/int", "/etc/quoted", "/etc/octal", "/etc/decimal"} {
		line := i + 3
		ci := uint32(cc[0].Files[path]["mode"].(float64))
		w, ok := warned[line]
		switch {
		case ci == kept[path] && ok:
			t.Errorf("%s: warned though cloud-init applies the mode kept, %04o:\n%s", path, ci, w)
		case ci != kept[path] && !ok:
			t.Errorf("%s: cloud-init applies %04o, the spec has %04o, and import says nothing", path, ci, kept[path])
		case ok && (!strings.Contains(w, fmt.Sprintf("mode 0%o", ci)) || !strings.Contains(w, fmt.Sprintf("keeps 0%o", kept[path]))):
			t.Errorf("%s: the warning does not say cloud-init's %04o and the spec's %04o:\n%s", path, ci, kept[path], w)
		}
	}
	if kept["/etc/int"] != 0o600 || kept["/etc/decimal"] != 0o600 {
		t.Errorf("modes kept: %v", kept)
	}
}

// TestCloudConfigBinaryContent: content given as YAML's !!binary is the
// bytes its base64 says, which an encoding (gzip) then applies to, as
// cloud-init's own YAML reading and write_files decoding have it.
func TestCloudConfigBinaryContent(t *testing.T) {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte("#!/bin/sh\necho hello\n"))
	zw.Close()
	b64 := base64.StdEncoding.EncodeToString(z.Bytes())
	plain := base64.StdEncoding.EncodeToString([]byte("plain\n"))
	data := "#cloud-config\nwrite_files:\n" +
		"  - path: /usr/bin/hello\n    encoding: gzip\n    content: !!binary |\n      " + b64 + "\n" +
		"  - path: /etc/plain\n    content: !!binary |\n      " + plain + "\n"
	res, diags := importer.Import(importer.Input{Name: "bin.cfg", Data: []byte(data)})
	if res == nil {
		t.Fatal(diags.Error())
	}
	got := map[string]string{}
	for _, f := range res.Hooks[0].Files {
		if f.Contents != nil {
			got[f.Path] = *f.Contents
		}
	}
	want := map[string]string{"/usr/bin/hello": "#!/bin/sh\necho hello\n", "/etc/plain": "plain\n"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("contents (-want +got):\n%s", d)
	}
}
