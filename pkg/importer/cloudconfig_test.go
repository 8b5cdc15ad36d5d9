package importer_test

import (
	"encoding/json"
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
