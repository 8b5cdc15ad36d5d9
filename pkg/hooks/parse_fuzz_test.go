package hooks

import (
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/internal/benchspec"
)

// checkWellFormed checks what every Parse result promises: diagnostics
// sorted, each with a line unless it concerns the whole file, a message,
// and a file name.
func checkWellFormed(t *testing.T, spec *Spec, diags Diagnostics) {
	t.Helper()
	for i, d := range diags {
		if d.Pos.File != "f.yaml" || d.Message == "" {
			t.Errorf("malformed diagnostic %#v", d)
		}
		if d.Pos.Line < 1 && (d.Path != "" || d.Pos.Column != 0) {
			t.Errorf("diagnostic without a line that is not about the whole file: %#v", d)
		}
		if i > 0 {
			a, b := diags[i-1].Pos, d.Pos
			if a.Line > b.Line || a.Line == b.Line && a.Column > b.Column {
				t.Errorf("diagnostics not sorted: %v before %v", a, b)
			}
		}
	}
	if spec != nil {
		for i := range spec.Hooks {
			spec.Where(spec.Hooks[i].Name)
			spec.WhereInScalar("hooks[0].manifest", i+1)
		}
	}
}

func TestParseNastyInputs(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	garbage := make([]byte, 4096)
	rng.Read(garbage)

	var hugeList strings.Builder
	hugeList.WriteString(header + "- name: a\n  exec:\n")
	for i := 0; i < 100000; i++ {
		hugeList.WriteString("  - x\n")
	}
	var manyHooks strings.Builder
	manyHooks.WriteString(header)
	for i := 0; i < 5000; i++ {
		manyHooks.WriteString("- name: same\n  exec: /bin/true\n")
	}
	// A billion laughs: a walk that expanded aliases without bound would
	// never end; only the levels a hook field can hold are walked.
	laughs := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h"} {
		laughs += n + ": &" + n + " [" + strings.Repeat("*"+prev+", ", 9) + "*" + prev + "]\n"
		prev = n
	}
	// Lists of aliases of lists, reached through a hook's pre: expanded,
	// this stands for a million strings in ten kilobytes.
	var bomb strings.Builder
	bomb.WriteString(header + "- name: a\n  exec: &a [" + strings.Repeat("x, ", 99) + "x]\n")
	bomb.WriteString("  pre: &b [" + strings.Repeat("*a, ", 99) + "*a]\n")
	for i := 1; i < 100; i++ {
		bomb.WriteString("- {name: b, exec: [x], pre: *b}\n")
	}
	// Files under files, deep: each is below the last, so each is
	// reported, but once, and every ancestor walk is as short as a path.
	var deepFiles strings.Builder
	deepFiles.WriteString(header + "- name: a\n  files:\n")
	for i, p := 0, ""; i < 2000; i++ {
		p += "/d"
		deepFiles.WriteString("  - {path: " + p + ", contents: x}\n")
	}
	inputs := map[string]string{
		"files under files":     deepFiles.String(),
		"files through aliases": header + "- name: a\n  files: &f [{path: /a, contents: x}]\n- name: b\n  files: *f\n  links: [{path: /a/b, target: *f}]\n",
		"alias amplification":   bomb.String(),
		"binary garbage":        string(garbage),
		"NUL bytes":             "apiVersion: \x00\x00\n",
		"invalid UTF-8":         header + "- name: \xff\xfe\n",
		"deep flow nesting":     header + "- name: a\n  exec: " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "\n",
		"deep block nesting":    header + "- name: a\n  env:\n" + deepMap(2000),
		"deep list in pre":      header + "- name: a\n  pre: [[[[[[[[x]]]]]]]]\n",
		"huge list":             hugeList.String(),
		"many duplicate hooks":  manyHooks.String(),
		"billion laughs":        laughs + header + "- name: a\n  exec: *h\n  pre: *h\n  env: *h\n  directives: {Unit: *h}\n",
		"self alias":            header + "- &h\n  name: a\n  exec: [/bin/true]\n  dropins: [*h]\n  pre: [*h]\n",
		"alias to a hook list":  "apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks: &l\n- name: a\n  exec: [/bin/true]\n  pre: *l\n",
		"only a scalar":         "hello\n",
		"CRLF line endings":     strings.ReplaceAll(header+"- name: a\n  manifest: |\n    A=1\n    [X]\n", "\n", "\r\n"),
		"unicode line breaks":   header + "- name: a\u2028  exec: [x]\n",
		"block scalar at EOF":   header + "- name: a\n  manifest: |",
		"folded edge":           header + "- name: a\n  manifest: >2-\n\n\n      x\n\t\n    y\n",
		"many documents":        strings.Repeat("---\na: 1\n", 1000),
		"weird keys":            header + "- name: a\n  ? [a, b]\n  : 1\n  ? {a: b}\n  : 2\n  ~: 3\n  !!binary aGk=: 4\n",
	}
	for name, src := range inputs {
		t.Run(name, func(t *testing.T) {
			spec, diags := Parse("f.yaml", []byte(src))
			checkWellFormed(t, spec, diags)
			if name == "alias amplification" && !strings.Contains(diags.Error(), "aliases in this spec expand") {
				t.Errorf("the expansion was not stopped: %d diagnostics", len(diags))
			}
			// YAML counts U+2028 as a line break, so that spec is valid.
			if len(diags) == 0 && name != "huge list" && name != "unicode line breaks" {
				t.Errorf("no diagnostics for %s", name)
			}
		})
	}
}

func deepMap(depth int) string {
	var b strings.Builder
	for i := 0; i < depth; i++ {
		b.WriteString(strings.Repeat(" ", 4+i) + "k:\n")
	}
	return b.String()
}

func FuzzParse(f *testing.F) {
	valid, err := os.ReadFile("testdata/valid.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add([]byte(whereSrc))
	f.Add([]byte(header + "- name: a\n  exec: /bin/echo hi\n  enabled: yes\n  env: {A-B: 1, A-B: 2}\n"))
	f.Add([]byte(header + "- name: x.timer\n  mask: true\n  manifest: >\n    a\n\n    [B]\n"))
	f.Add([]byte(header + "- name: a\n  files: [{path: /a, mode: 420, local: ../x, verification: {hash: sha1-x}}]\n  links: [{path: /a/b, target: c, hard: true}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, diags := Parse("f.yaml", data)
		checkWellFormed(t, spec, diags)
		if spec != nil {
			// Every position Where gives is in the file.
			lines := len(splitText(string(data)))
			for path, p := range spec.pos.all() {
				if p.Line < 1 || p.Line > lines {
					t.Errorf("Where(%q) = %v, outside the file's %d lines", path, p, lines)
				}
			}
			for path, sc := range spec.pos.allLines() {
				for n := 1; ; n++ {
					l, ok := sc.line(n)
					if !ok {
						break
					}
					if l < 1 || l > lines {
						t.Errorf("scalar %q has line %d, outside the file's %d lines", path, l, lines)
					}
				}
			}
		}
	})
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
