package cloudinit_test

import (
	"encoding/json"
	"github.com/hostprov/hostprov/pkg/render/cloudinit"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/hosttools"
	"github.com/hostprov/hostprov/pkg/compile"
)

// pyRunWriteFiles runs cloud-init's own write_files module code on the
// write_files entries of a cloud-config (a JSON object on stdin: the
// entries and a root), with every path put below the root: the mode and
// the owner are applied as cloud-init applies them, owner last.
const pyRunWriteFiles = `
import json, os, sys
from cloudinit.config import cc_write_files as w
doc = json.load(sys.stdin)
for f in doc["files"]:
    f["path"] = doc["root"] + f["path"]
w.write_files("write_files", doc["files"], "root:root")
`

// TestCloudInitKeepsSetID: a file with set-user-ID or set-group-ID bits
// has them on the machine after cloud-init's write_files (which applies
// the mode and then the owner, and chown clears both bits) and the
// output's runcmd have run, whether owned by root, by id, or downloaded
// by the fetch script. Needs root, as cloud-init does, for the owners.
func TestCloudInitKeepsSetID(t *testing.T) {
	py := hosttools.CloudInitPython(t)
	if os.Getuid() != 0 {
		hosttools.Unavailable(t, "needs root to give files to their owners as cloud-init does")
	}
	dir := t.TempDir()
	// The download's hash is that of no bytes, which the server sends.
	spec := header + `- name: tool
  exec: [/usr/local/bin/tool]
  files:
  - {path: /usr/local/bin/tool, contents: "#!/bin/sh\n", mode: 04755}
  - {path: /usr/local/bin/by-id, contents: "#!/bin/sh\n", mode: 06750, user: 0, group: 0}
  - {path: /usr/local/bin/by-name, contents: "#!/bin/sh\n", mode: 02755, user: root, group: root}
  - {path: /usr/local/bin/plain, contents: "#!/bin/sh\n", mode: 0755}
  - path: /usr/local/bin/fetched
    source: https://downloads.example.com/fetched
    verification: {hash: sha256-e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855}
    mode: 04711
`
	want := map[string]os.FileMode{
		"/usr/local/bin/tool":    0o755 | os.ModeSetuid,
		"/usr/local/bin/by-id":   0o750 | os.ModeSetuid | os.ModeSetgid,
		"/usr/local/bin/by-name": 0o755 | os.ModeSetgid,
		"/usr/local/bin/plain":   0o755,
		"/usr/local/bin/fetched": 0o711 | os.ModeSetuid,
	}
	r, diags := compile.Build(filepath.Join(dir, "setid.yaml"), []byte(spec), compile.Options{})
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	ci, err := cloudinit.Render(r.Units, cloudinit.Options{Storage: r.Storage})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		WriteFiles []map[string]any `yaml:"write_files"`
		Runcmd     [][]string       `yaml:"runcmd"`
	}
	if err := yaml.Unmarshal(ci, &doc); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "root")
	var files []map[string]any
	for _, f := range doc.WriteFiles {
		if p, _ := f["path"].(string); !strings.HasPrefix(p, "/etc/systemd/") {
			files = append(files, f)
		}
	}
	in, _ := json.Marshal(map[string]any{"files": files, "root": root})
	hosttools.RunPython(t, py, pyRunWriteFiles, in)

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	// runcmd, in order, for the paths of the files: the fetch script and
	// what else names them.
	ran := 0
	for _, c := range doc.Runcmd {
		c = append([]string(nil), c...)
		touches := false
		for i, a := range c {
			switch {
			case want[a] != 0:
				c[i], touches = filepath.Join(root, a), true
			case a == "/var/lib/hostprov/fetch.py":
				c[i] = filepath.Join(root, a)
			case strings.HasPrefix(a, "https://"):
				c[i] = srv.URL + "/x"
			}
		}
		if !touches {
			continue
		}
		ran++
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("runcmd %v: %v\n%s", c, err, out)
		}
	}
	if ran == 0 {
		t.Fatalf("no runcmd for the files:\n%s", ci)
	}
	for p, m := range want {
		fi, err := os.Stat(filepath.Join(root, p))
		if err != nil {
			t.Error(err)
			continue
		}
		if got := fi.Mode(); got != m {
			t.Errorf("%s: mode %v on the machine, want %v", p, got, m)
		}
	}
	if t.Failed() {
		t.Logf("the output:\n%s", ci)
	}
}
