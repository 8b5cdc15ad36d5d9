package importer_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/sdtool"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/importer"
	"github.com/hostprov/hostprov/pkg/render"
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

// TestCloudConfigRoundTrip: a cloud-config imported and rendered with
// --format cloud-init writes, as cloud-init itself reads both, the same
// files (bytes, mode, owner), users (system, homedir, shell, groups) and
// group names as the original, less the write_files entries import warned
// it kept out.
func TestCloudConfigRoundTrip(t *testing.T) {
	py := sdtool.CloudInitPython(t)
	name := "web.cloud-config.yaml"
	data, err := os.ReadFile(filepath.Join("testdata", "in", name))
	if err != nil {
		t.Fatal(err)
	}
	res, diags := importer.Import(importer.Input{Name: name, Data: data})
	if res == nil {
		t.Fatal(diags.Error())
	}
	r, bad := render.BuildAll(res.Name+".yaml", res.Spec)
	if bad.HasErrors(false) {
		t.Fatal(bad.Error())
	}
	out, err := render.CloudInit(r.Units, render.CloudInitOptions{Storage: r.Storage})
	if err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal([]string{string(data), string(out)})
	var both []ccData
	if err := json.Unmarshal(sdtool.RunPython(t, py, pyFiles, in), &both); err != nil {
		t.Fatal(err)
	}
	want, got := both[0], both[1]
	// Take out of the original what import kept out, by the entry the
	// warning names.
	var doc struct {
		WriteFiles []struct {
			Path string `json:"path"`
		} `json:"write_files"`
	}
	if err := jsonOfYAML(data, &doc); err != nil {
		t.Fatal(err)
	}
	for _, d := range diags {
		if d.Severity != hooks.Warning || !strings.HasPrefix(d.Message, "kept out: ") {
			continue
		}
		// A user's field hostprov lacks is not among those compared, nor
		// is a group's members list; the default user is no mapping.
		if p := splitPath(d.Path); len(p) == 2 && p[0] == "write_files" {
			delete(want.Files, doc.WriteFiles[p[1].(int)].Path)
		}
	}
	if d := cmp.Diff(want.Files, got.Files); d != "" {
		t.Errorf("files differ (-original +rendered):\n%s\n%s", d, out)
	}
	if d := cmp.Diff(want.Users, got.Users); d != "" {
		t.Errorf("users differ (-original +rendered):\n%s\n%s", d, out)
	}
	if d := cmp.Diff(want.Groups, got.Groups); d != "" {
		t.Errorf("groups differ (-original +rendered):\n%s\n%s", d, out)
	}
}

// jsonOfYAML decodes YAML into v through JSON.
func jsonOfYAML(data []byte, v any) error {
	var raw any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return err
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// TestCloudConfigIntegerPermissions: cloud-init reads permissions that
// YAML gives as a decimal integer (600, unquoted) as that number, so 600
// is mode 01130 to it; import keeps the octal the digits say and warns at
// the value, naming both. A quoted or 0-led mode is the same to both and
// passes without a word. What cloud-init applies is asked of its own
// write_files code.
func TestCloudConfigIntegerPermissions(t *testing.T) {
	py := sdtool.CloudInitPython(t)
	data := "#cloud-config\nwrite_files:\n" +
		"  - {path: /etc/int, content: x, permissions: 600}\n" +
		"  - {path: /etc/quoted, content: x, permissions: '600'}\n" +
		"  - {path: /etc/octal, content: x, permissions: 0600}\n" +
		"  - {path: /etc/decimal, content: x, permissions: 384}\n"
	in, _ := json.Marshal([]string{data})
	var cc []ccData
	if err := json.Unmarshal(sdtool.RunPython(t, py, pyFiles, in), &cc); err != nil {
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
