package butane_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	butaneconfig "github.com/coreos/butane/config"
	"github.com/coreos/butane/config/common"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render/butane"
	"github.com/hostprov/hostprov/pkg/render/internal/rendertest"
)

// TestButaneLocalEveryVersion: files from local: (text and bytes that
// are not UTF-8) translate with Butane's own library in strict mode (no
// error, no warning; --files-dir the spec's directory) at every Butane
// version hostprov writes, and the Ignition config, as that version's
// parser reads it, writes the files' bytes. fcos 1.0.0 has no
// contents.local: Butane warns "unused key local" there and the machine
// got an empty file, so the bytes must be carried in the config itself.
func TestButaneLocalEveryVersion(t *testing.T) {
	dir := t.TempDir()
	text, blob := []byte("#!/bin/sh\necho 'hi'\n"), []byte{0xff, 0x00, 0xfe, '\n'}
	for name, b := range map[string][]byte{"collect.sh": text, "blob.bin": blob} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec := rendertest.SpecHeader + `- name: collect
  exec: [/bin/sh, /usr/local/lib/collect.sh]
  files:
  - {path: /usr/local/lib/collect.sh, local: collect.sh}
  - {path: /usr/local/lib/blob.bin, local: blob.bin}
`
	file := filepath.Join(dir, "local.yaml")
	r, diags := compile.Build(file, []byte(spec), compile.Options{})
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	want := map[string][]byte{"/usr/local/lib/collect.sh": text, "/usr/local/lib/blob.bin": blob}
	for _, v := range butane.Versions() {
		t.Run(v.Variant+"-"+v.Version, func(t *testing.T) {
			bu, err := butane.Render(r.Units, butane.Options{Variant: v.Variant, Version: v.Version, Storage: r.Storage})
			if err != nil {
				t.Fatal(err)
			}
			ign, rpt, err := butaneconfig.TranslateBytes(bu, common.TranslateBytesOptions{TranslateOptions: common.TranslateOptions{FilesDir: dir}})
			if err != nil || len(rpt.Entries) > 0 {
				t.Fatalf("butane --strict refuses it: %v\n%s\n%s", err, rpt, bu)
			}
			j, rpt, err := rendertest.IgnitionParsers[v.IgnitionVersion](ign)
			if err != nil || len(rpt.Entries) > 0 {
				t.Fatalf("Ignition %s: %v\n%s\n%s", v.IgnitionVersion, err, rpt, ign)
			}
			var got rendertest.IgnitionStorage
			if err := json.Unmarshal(j, &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Storage.Files) != len(want) {
				t.Fatalf("%d files, want %d:\n%s", len(got.Storage.Files), len(want), ign)
			}
			for _, f := range got.Storage.Files {
				if f.Contents.Source == nil {
					t.Errorf("%s: no contents:\n%s", f.Path, bu)
					continue
				}
				if b := rendertest.DecodeContents(t, *f.Contents.Source, f.Contents.Compression); !bytes.Equal(b, want[f.Path]) {
					t.Errorf("%s: contents %q, want %q\n%s", f.Path, b, want[f.Path], bu)
				}
			}
			// Where Butane has local:, the config names the file, as
			// users write it.
			if v.IgnitionVersion != "3.0.0" && !strings.Contains(string(bu), "local: collect.sh") {
				t.Errorf("the file is not written as local:\n%s", bu)
			}
		})
	}
}
