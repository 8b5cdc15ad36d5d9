package kops_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/kops"
	"github.com/hostprov/hostprov/pkg/render/kopshooks"
)

// exampleDir is the kops example of the repository.
var exampleDir = filepath.Join("..", "..", "examples", "kops")

// FuzzRead checks that Read never panics, that every diagnostic has a
// position in the file, and that what follows Read (selecting, both
// renderings, and writing units back) holds up on whatever Read accepts.
func FuzzRead(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(exampleDir, "*.yaml"))
	for _, dir := range []string{"docs", "conversion", "golden/hooks-containerd-exec", "third-party"} {
		more, _ := filepath.Glob(filepath.Join(corpusDir, dir, "*.yaml*"))
		seeds = append(seeds, more...)
	}
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err == nil {
			f.Add(stripHeader(data))
		}
	}
	f.Add([]byte("apiVersion: kops.k8s.io/v1alpha3\nkind: InstanceGroup\nspec:\n  role: Node\n  hooks:\n  - execContainer: {image: a, environment: {X: y}}\n"))
	f.Add([]byte("apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\nspec:\n  hooks: &a [*a]\n"))
	no := false
	units := []compile.Unit{
		{Name: "a.service", Contents: []byte("[Service]\nExecStart=/bin/true\n")},
		{Name: "b.service", Enabled: &no},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, diags := kops.Read("f.yaml", data)
		for _, d := range diags {
			if d.Pos.File != "f.yaml" {
				t.Fatalf("diagnostic without its file: %v", d)
			}
			if d.Pos.Line == 0 && d.Message != "the file has no YAML document" {
				t.Fatalf("diagnostic without a line: %v", d)
			}
		}
		if ms == nil {
			t.Fatal("Read returned no manifests")
		}
		hs, _ := ms.Hooks("", "")
		if _, err := kops.RenderCompat(hs, kops.Containerd); err != nil {
			t.Fatal(err)
		}
		if !diags.HasErrors(false) {
			_, more := kops.Render(hs, kops.Docker)
			for _, d := range more {
				if d.Pos.Line == 0 {
					t.Fatalf("canonical diagnostic without a line: %v", d)
				}
			}
		}
		// Set either refuses or writes what reads back as meant;
		// it checks the latter itself, so here it must only not panic.
		_, _ = kopshooks.Set(data, "", units)
	})
}
