package cloudinit_test

import (
	"bytes"
	"encoding/json"
	"github.com/hostprov/hostprov/pkg/render/cloudinit"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/hosttools"
	"github.com/hostprov/hostprov/pkg/compile"
)

// TestCloudInitCompressesLargeFiles: a large file's contents are written
// gzip-compressed (encoding: gz+b64), which cloud-init's own write_files
// code decodes to the very bytes, and the cloud-config is a fraction of
// the file's size; a small file stays text, and binary bytes that do not
// compress stay base64. The same spec gives the same bytes twice.
func TestCloudInitCompressesLargeFiles(t *testing.T) {
	dir := t.TempDir()
	var big strings.Builder
	for i := range 20000 {
		big.WriteString("option-" + string(rune('a'+i%26)) + " = value\n")
	}
	noise := make([]byte, 8192)
	x := uint32(2463534242)
	for i := range noise {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		noise[i] = byte(x)
	}
	for name, data := range map[string][]byte{"big.conf": []byte(big.String()), "noise.bin": noise} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec := header + `- name: app
  exec: [/bin/true]
  files:
    - {path: /etc/app/big.conf, local: big.conf}
    - {path: /etc/app/small.conf, contents: "debug = false\n"}
    - {path: /etc/app/noise.bin, local: noise.bin}
`
	r, diags := compile.Build(filepath.Join(dir, "spec.yaml"), []byte(spec), compile.Options{})
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	ci, err := cloudinit.Render(r.Units, cloudinit.Options{Storage: r.Storage})
	if err != nil {
		t.Fatal(err)
	}
	again, _ := cloudinit.Render(r.Units, cloudinit.Options{Storage: r.Storage})
	if !bytes.Equal(ci, again) {
		t.Error("the same spec gave other bytes")
	}
	if len(ci) > big.Len()/10+len(noise)*2 {
		t.Errorf("the cloud-config is %d bytes for a %d-byte text file and %d random bytes", len(ci), big.Len(), len(noise))
	}
	var doc struct {
		WriteFiles []map[string]any `yaml:"write_files"`
	}
	if err := yaml.Unmarshal(ci, &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"/etc/app/big.conf": "gz+b64", "/etc/app/small.conf": "", "/etc/app/noise.bin": "b64"}
	var files []map[string]any
	for _, f := range doc.WriteFiles {
		p, _ := f["path"].(string)
		enc, ok := want[p]
		if !ok {
			continue
		}
		if got, _ := f["encoding"].(string); got != enc {
			t.Errorf("%s: encoding %q, want %q", p, got, enc)
		}
		files = append(files, f)
	}
	if len(files) != len(want) {
		t.Fatalf("write_files has %d of the %d files:\n%s", len(files), len(want), ci)
	}

	// cloud-init's own code writes them.
	py := hosttools.CloudInitPython(t)
	if os.Getuid() != 0 {
		hosttools.Unavailable(t, "needs root to give files to their owners as cloud-init does")
	}
	root := filepath.Join(dir, "root")
	in, _ := json.Marshal(map[string]any{"files": files, "root": root})
	hosttools.RunPython(t, py, pyRunWriteFiles, in)
	for p, data := range map[string][]byte{"/etc/app/big.conf": []byte(big.String()), "/etc/app/small.conf": []byte("debug = false\n"), "/etc/app/noise.bin": noise} {
		got, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Error(err)
			continue
		}
		if !bytes.Equal(got, data) {
			t.Errorf("%s: %d bytes on the machine, want the spec's %d", p, len(got), len(data))
		}
	}
}
