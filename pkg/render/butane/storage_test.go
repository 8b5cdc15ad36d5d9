package butane_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/render/butane"
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
