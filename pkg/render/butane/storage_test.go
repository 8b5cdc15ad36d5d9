package butane_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coreos/butane/config"
	"github.com/coreos/butane/config/common"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/render/butane"
	"github.com/hostprov/hostprov/pkg/render/ignition"
	"github.com/hostprov/hostprov/pkg/render/internal/rendertest"
)

// Butane for Ignition 3.0.0 (fcos 1.0.0) refuses a sha256 hash, as the
// Ignition output does.
func TestButaneSHA256For300(t *testing.T) {
	spec := rendertest.SpecHeader + "- name: a\n  files: [{path: /a, contents: \"\", verification: {hash: sha256-e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855}}]\n"
	r, diags := compile.Build("t.yaml", []byte(spec), compile.Options{})
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	_, err := butane.Render(r.Units, butane.Options{IgnitionVersion: "3.0.0", Storage: r.Storage})
	var ds hooks.Diagnostics
	if !errors.As(err, &ds) || !strings.HasPrefix(ds.Error(), "t.yaml:5:11: error: file /a: Ignition 3.0.0 verifies only sha512 hashes") {
		t.Errorf("got %v", err)
	}
	if _, err := butane.Render(r.Units, butane.Options{IgnitionVersion: "3.1.0", Storage: r.Storage}); err != nil {
		t.Errorf("3.1.0: %v", err)
	}
}

// TestStorageButaneTranslates: Butane's own translation of the Butane
// golden, with the spec's directory as --files-dir, is the Ignition
// output.
func TestStorageButaneTranslates(t *testing.T) {
	for name, path := range rendertest.StorageGoldens(t) {
		t.Run(name, func(t *testing.T) {
			r := rendertest.Build(t, path)
			for _, iv := range []string{"3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0"} {
				bu, err := butane.Render(r.Units, butane.Options{IgnitionVersion: iv, Storage: r.Storage})
				if err != nil {
					t.Fatal(err)
				}
				got, rpt, err := config.TranslateBytes(bu, common.TranslateBytesOptions{TranslateOptions: common.TranslateOptions{FilesDir: filepath.Dir(path)}})
				if err != nil || len(rpt.Entries) > 0 {
					t.Fatalf("Butane %s: %v\n%s\n%s", iv, err, rpt, bu)
				}
				want, err := ignition.Render(r.Units, ignition.Options{Version: iv, Storage: r.Storage})
				if err != nil {
					t.Fatal(err)
				}
				rendertest.SameJSON(t, name+" "+iv, want, got)
			}
		})
	}
}
