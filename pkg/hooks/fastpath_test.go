package hooks

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/hostprov/hostprov/internal/benchspec"
	"github.com/hostprov/hostprov/internal/yamlnode"
)

// checkFastPath parses data by the fast parser's path and by yaml.v3's
// and requires the same Spec (hooks, positions, texts) and the same
// diagnostics.
func checkFastPath(t *testing.T, name string, data []byte) {
	t.Helper()
	fast, fdiags := Parse("f.yaml", data)
	defer func(old bool) { fastParse = old }(fastParse)
	fastParse = false
	slow, sdiags := Parse("f.yaml", data)
	if !reflect.DeepEqual(fdiags, sdiags) {
		t.Fatalf("%s: the fast path reports\n%v\nyaml.v3's\n%v", name, fdiags.Error(), sdiags.Error())
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%s: the fast path decodes another Spec than yaml.v3's path", name)
	}
}

// repoSpecs are the files of every spec of the repository, good and bad.
func repoSpecs(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, glob := range []string{"../../testdata/golden/*.yaml", "../../testdata/golden/*/*.yaml", "../../testdata/bad/*.yaml",
		"../../examples/*/*.yaml", "testdata/*.yaml"} {
		f, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f...)
	}
	if len(files) < 50 {
		t.Fatalf("only %d specs found", len(files))
	}
	return files
}

// TestFastPath holds the decoding of what the fast parser reads (each hook
// as it is read) to the decoding of yaml.v3's tree, on every spec of the
// repository, good and bad, and on the benchmark's spec.
func TestFastPath(t *testing.T) {
	for _, f := range repoSpecs(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checkFastPath(t, f, data)
	}
	checkFastPath(t, "benchspec", benchspec.Spec(50))
	// The fast parser gives up after it has given two hooks away (a
	// multi-line plain scalar, a mapping in a value): what was decoded of
	// them must not show.
	for _, late := range []string{"    continued\n", "  user: a: b\n"} {
		data := []byte(header + "- name: a\n  exec: [/bin/true]\n- name: a\n  exec: [/bin/false]\n- name: c\n  description: x\n" + late)
		if _, ok := yamlnode.Fast(data); ok {
			t.Fatalf("the fast parser reads %q, which this test needs it to give up on", data)
		}
		checkFastPath(t, "late fallback", data)
	}
}

func FuzzFastPath(f *testing.F) {
	f.Add(benchspec.Spec(3))
	f.Add([]byte(header + "- name: a\n  exec: [/bin/true]\n- name: a\n  exec: [x]\nhooks:\n- name: b\n"))
	f.Add([]byte("kind: Hooks\nhooks:\n- name: a\n  files: [{path: /a, mode: 420}]\n- name: b\n  files: [{path: /a, mode: 420}]\napiVersion: x\n"))
	for _, glob := range []string{"../../testdata/bad/*.yaml", "../../examples/*/*.yaml"} {
		files, _ := filepath.Glob(glob)
		for _, file := range files {
			if data, err := os.ReadFile(file); err == nil {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFastPath(t, "input", data)
	})
}
