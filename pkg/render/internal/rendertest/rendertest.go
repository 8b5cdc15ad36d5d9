// Package rendertest holds what the tests of the outputs share: where the
// repository's golden specs and examples are, and building them. Every
// output is checked against the same specs, so that a unit's bytes are
// compared across outputs from one list.
package rendertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostprov/hostprov/pkg/compile"
)

// Path joins elem to the repository's root, found as the nearest directory
// above the test's own that holds go.mod: the outputs' packages sit at
// different depths, and their tests all read the same testdata.
func Path(elem ...string) string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		up := filepath.Dir(dir)
		if up == dir {
			panic("rendertest: no go.mod above " + dir)
		}
		dir = up
	}
	return filepath.Join(append([]string{dir}, elem...)...)
}

// GoldenSpecs lists every spec whose output is kept under testdata/golden:
// the golden specs themselves and the bundled examples. The key is the
// golden file's name without extension.
func GoldenSpecs(t *testing.T) map[string]string {
	t.Helper()
	specs := map[string]string{}
	ms, err := filepath.Glob(Path("testdata", "golden", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		specs[strings.TrimSuffix(filepath.Base(m), ".yaml")] = m
	}
	ex, err := filepath.Glob(Path("examples", "*", "hostprov.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ex {
		specs["examples/"+filepath.Base(filepath.Dir(m))] = m
	}
	if len(ms) < 5 || len(ex) < 2 {
		t.Fatalf("found %d golden specs and %d examples; the tests expect the ones in the repository", len(ms), len(ex))
	}
	return specs
}

// Units compiles the spec at path to its units; a golden spec must
// compile without any diagnostic.
func Units(t *testing.T, path string) []compile.Unit {
	t.Helper()
	return Build(t, path).Units
}

// Build compiles the spec at path to its units and storage, as
// compile.Build does. The path, not only its name, is passed on: local:
// files are read next to the spec.
func Build(t *testing.T, path string) compile.Result {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, diags := compile.Build(path, data, compile.Options{})
	if len(diags) > 0 {
		t.Fatalf("golden specs must render without any diagnostic:\n%v", diags.Error())
	}
	return r
}

// TrickyUnits are unit files whose bytes a careless YAML writer would
// change: leading blank lines and indentation, tabs, trailing spaces,
// characters YAML takes for line breaks, characters beyond U+FFFF, and a
// unit that is not UTF-8 at all.
func TrickyUnits() []compile.Unit {
	off := false // not parsed for [Install]: some of these are not unit files
	contents := []string{
		"[Service]\nExecStart=/bin/true\n",
		"\n\n[Service]\nExecStart=/bin/true\n",
		" # indented comment\n[Service]\nExecStart=/bin/true\n",
		"\t# tab\n[Service]\nExecStart=/bin/true\n",
		"[Service]\nExecStart=/bin/true   \n\t\n",
		"[Unit]\nDescription=cowboy \U0001F920 中文 café\n",
		"[Unit]\n# line\u2028separator, next\u0085line, bom\ufeff, del\x7f, bell\a\nDescription=x\n",
		"[Unit]\r\nDescription=crlf\r\n",
		"[Unit]\nDescription=no final newline",
		"[Unit]\nDescription=two final newlines\n\n",
		"key: value\n- item\n--- \n...\n# not YAML: \"'|>&*!%@`\n",
		"[Unit]\nDescription=not UTF-8 \xff\xfe\n",
	}
	us := make([]compile.Unit, len(contents))
	for i, c := range contents {
		us[i] = compile.Unit{Name: fmt.Sprintf("tricky-%02d.service", i), Contents: []byte(c), Enabled: &off, Hook: i}
	}
	return us
}

// CompareFiles fails t unless an output (named format) holds exactly the
// unit files of want, path by path and byte for byte: every output is
// held to the same bytes of the units.
func CompareFiles(t *testing.T, format string, want, got map[string]string) {
	t.Helper()
	for p, w := range want {
		if g, ok := got[p]; !ok {
			t.Errorf("%s output lacks %s", format, p)
		} else if g != w {
			t.Errorf("%s output has other bytes for %s:\n got %q\nwant %q", format, p, g, w)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s output has %s, which is not a rendered unit", format, p)
		}
	}
}

// CloudInitSchema is what cloud-init's own schema check says of the
// cloud-config in file: the cloud-init output and its merges are all held
// to it.
func CloudInitSchema(file string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "cloud-init", "schema", "-c", file)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// SpecHeader opens a spec; the tests write its hooks after it.
const SpecHeader = "apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n"
