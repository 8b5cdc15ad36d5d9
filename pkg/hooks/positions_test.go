package hooks

import (
	"fmt"
	"iter"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/internal/benchspec"
)

// refPositions records every position as it is recorded, in plain maps of
// whole paths, the last one recorded winning: what the compact store of
// positions must answer as.
type refPositions struct {
	file  string
	pos   map[string]Position
	lines map[string]blockScalar
}

func (r *refPositions) where(path string) Position {
	for {
		if p, ok := r.pos[path]; ok {
			return p
		}
		if path == "" {
			return Position{File: r.file}
		}
		path = ParentPath(path)
	}
}

func (r *refPositions) whereInScalar(path string, n int) Position {
	if sc, ok := r.lines[path]; ok {
		if line, ok := sc.line(n); ok {
			return Position{File: r.file, Line: line, Column: sc.column}
		}
	}
	return r.where(path)
}

func (r *refPositions) posInValue(path string, line, col int) Position {
	if _, ok := r.lines[path]; !ok && line > 1 {
		return r.where(path)
	}
	p := r.whereInScalar(path, line)
	if p.Line > 0 && p.Column > 0 {
		p.Column += col - 1
	}
	return p
}

// traced parses data with every recorded position traced into a
// refPositions.
func traced(t *testing.T, data []byte) (*Spec, *refPositions) {
	t.Helper()
	ref := &refPositions{file: "p.yaml", pos: map[string]Position{}, lines: map[string]blockScalar{}}
	traceSet = func(path string, pos Position) { ref.pos[path] = pos }
	traceLines = func(path string, b blockScalar) { ref.lines[path] = b }
	defer func() { traceSet, traceLines = nil, nil }()
	spec, _ := Parse("p.yaml", data)
	return spec, ref
}

// checkPositions asks spec and ref for every recorded path, its parent,
// children it may or may not have, and each line of its scalar.
func checkPositions(t *testing.T, name string, spec *Spec, ref *refPositions) {
	t.Helper()
	paths := map[string]bool{"": true, "hooks[0]": true, "hooks[99999]": true, "hooks[00]": true, "nothing": true}
	for p := range ref.pos {
		paths[p] = true
	}
	for p := range ref.lines {
		paths[p] = true
	}
	for p := range paths {
		for _, q := range []string{p, ParentPath(p), p + ".x", p + "[0]", p + "[99]", p + ".name"} {
			if got, want := spec.Where(q), ref.where(q); got != want {
				t.Fatalf("%s: Where(%q) = %v, want %v", name, q, got, want)
			}
			_, want := ref.pos[q]
			if got := spec.Has(q); got != want {
				t.Fatalf("%s: Has(%q) = %v, want %v", name, q, got, want)
			}
			for n := 0; n <= 4; n++ {
				if got, want := spec.WhereInScalar(q, n), ref.whereInScalar(q, n); got != want {
					t.Fatalf("%s: WhereInScalar(%q, %d) = %v, want %v", name, q, n, got, want)
				}
				if got, want := spec.PosInValue(q, n, 3), ref.posInValue(q, n, 3); got != want {
					t.Fatalf("%s: PosInValue(%q, %d, 3) = %v, want %v", name, q, n, got, want)
				}
			}
		}
	}
	n := 0
	for p, pos := range spec.pos.all() {
		if ref.pos[p] != pos {
			t.Fatalf("%s: all() gives %q at %v, recorded at %v", name, p, pos, ref.pos[p])
		}
		n++
	}
	if n != len(ref.pos) {
		t.Fatalf("%s: all() gives %d paths, %d were recorded", name, n, len(ref.pos))
	}
	n = 0
	for p, b := range spec.pos.allLines() {
		if fmt.Sprint(ref.lines[p]) != fmt.Sprint(b) {
			t.Fatalf("%s: allLines() gives %q as %v, recorded as %v", name, p, b, ref.lines[p])
		}
		n++
	}
	if n != len(ref.lines) {
		t.Fatalf("%s: allLines() gives %d scalars, %d were recorded", name, n, len(ref.lines))
	}
}

// bigHooks is a spec whose hooks have more values than are looked through
// in order (smallHook), so that their values are indexed.
func bigHooks() []byte {
	var b strings.Builder
	b.WriteString(header)
	for h := 0; h < 3; h++ {
		fmt.Fprintf(&b, "- name: big-%d\n  exec:\n", h)
		for i := 0; i < 3*smallHook; i++ {
			fmt.Fprintf(&b, "  - \"arg %d\"\n", i)
		}
		b.WriteString("  env:\n")
		for i := 0; i < smallHook; i++ {
			fmt.Fprintf(&b, "    V%d: '%d'\n", i, i)
		}
		b.WriteString("  directives:\n    Unit:\n")
		for i := 0; i < smallHook; i++ {
			fmt.Fprintf(&b, "    - After=x%d.service\n", i)
		}
		b.WriteString("  manifest: |\n    Nice=1\n    IOWeight=10\n")
	}
	return []byte(b.String())
}

// farValues is a spec whose hooks have values too far from the hook's
// line, or at too large a column, for the compact store (see near), and
// an alias of a hook written before.
func farValues() []byte {
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("- &first\n  name: far\n  manifest: |\n")
	for i := 0; i < 40000; i++ {
		b.WriteString("    A=1\n")
	}
	b.WriteString("  exec: [/bin/true, \"after\"]\n  description: \"d\"\n")
	b.WriteString("- name: wide\n  exec: [/bin/echo, \"" + strings.Repeat("x", 70000) + "\", \"y\", 'z']\n")
	b.WriteString("- *first\n")
	return []byte(b.String())
}

// TestPositionsAsRecorded holds the compact store of positions to a map
// of every position recorded, on every spec of the repository, good and
// bad, by both parsers, and on specs of hooks of many values.
func TestPositionsAsRecorded(t *testing.T) {
	files := repoSpecs(t)
	specs := map[string][]byte{"benchspec": benchspec.Spec(20), "big hooks": bigHooks(), "where": []byte(whereSrc), "far values": farValues()}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		specs[f] = data
	}
	defer func(old bool) { fastParse = old }(fastParse)
	for _, fast := range []bool{true, false} {
		fastParse = fast
		for name, data := range specs {
			spec, ref := traced(t, data)
			if spec == nil {
				continue
			}
			checkPositions(t, fmt.Sprintf("%s (fast parser %v)", name, fast), spec, ref)
			if name == "far values" && (len(spec.pos.other) == 0 || len(spec.pos.texts) == 0) {
				t.Errorf("far values: %d positions and %d scalars are kept apart, want some of each", len(spec.pos.other), len(spec.pos.texts))
			}
		}
	}
}

// TestLocateAfterParse checks that positions located after Parse, in the
// spec's file or another, replace those Parse recorded, in hooks of few
// values and of many.
func TestLocateAfterParse(t *testing.T) {
	spec, ref := traced(t, bigHooks())
	locate := func(path string, pos Position) {
		spec.Locate(path, pos)
		ref.pos[path] = pos
	}
	locate("hooks[0].exec[3]", Position{File: "other.yaml", Line: 7, Column: 2})
	locate("hooks[1].exec[3]", Position{File: "p.yaml", Line: 1, Column: 1})
	locate("hooks[1].exec[3]", Position{File: "p.yaml", Line: 2, Column: 1})
	locate("hooks[2].name", Position{File: "p.yaml", Line: 9, Column: 9})
	locate("hooks[7].name", Position{File: "p.yaml", Line: 3, Column: 3})
	locate("apiVersion", Position{File: "x.yaml", Line: 5, Column: 5})
	locate("kind", Position{File: "p.yaml", Line: 6, Column: 6})
	checkPositions(t, "located", spec, ref)

	few, ref := traced(t, []byte(whereSrc))
	few.Locate("hooks[6].exec[1]", Position{File: "p.yaml", Line: 70, Column: 1})
	ref.pos["hooks[6].exec[1]"] = Position{File: "p.yaml", Line: 70, Column: 1}
	checkPositions(t, "located in a small hook", few, ref)
}

// TestSrcLine holds the lines found from the one asked for before, for a
// source whose lines "\n" ends, to the source split into lines, asked in
// order and out of order.
func TestSrcLine(t *testing.T) {
	for _, src := range []string{"", "\n", "a\nb\n", "a\n\n  c\nd", string(bigHooks())} {
		lines := splitText(src)
		d := &decoder{src: src, asciiLines: true}
		ks := []int{}
		for k := 0; k <= len(lines)+1; k++ {
			ks = append(ks, k)
		}
		for k := len(lines) + 1; k >= 0; k -= 3 {
			ks = append(ks, k, k/2)
		}
		for _, k := range ks {
			got, ok := d.srcLine(k)
			if want := k < len(lines); ok != want || ok && got != lines[k] {
				t.Fatalf("line %d of %q: %q, %v; want %v", k, src, got, ok, want)
			}
		}
	}
}

// TestSpecKeepsNoSource checks that a parsed spec does not keep its
// source alive: values, keys and paths are copied out of it, so that a
// spec whose text is mostly comments keeps only what it says. The heap
// is measured, not the time.
func TestSpecKeepsNoSource(t *testing.T) {
	source := func() []byte {
		var b strings.Builder
		b.WriteString(header)
		for i := 0; i < 8; i++ {
			fmt.Fprintf(&b, "- name: h-%d\n  exec: [/bin/true, \"%d\"]\n  env: {A: b}\n  directives: {Unit: [After=x]}\n", i, i)
			b.WriteString(strings.Repeat("# "+strings.Repeat("x", 1000)+"\n", 1000))
		}
		return []byte(b.String())
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	spec, diags := Parse("p.yaml", source())
	runtime.GC()
	runtime.ReadMemStats(&after)
	if diags.HasErrors(false) || len(spec.Hooks) != 8 {
		t.Fatalf("%v", diags)
	}
	if kept := int64(after.HeapAlloc) - int64(before.HeapAlloc); kept > 1<<20 {
		t.Errorf("a spec of 8 small hooks in 8 MB of source keeps %d bytes", kept)
	}
	runtime.KeepAlive(spec)
}

// allLines yields every scalar whose lines are recorded.
func (p *positions) allLines() iter.Seq2[string, blockScalar] {
	return func(yield func(string, blockScalar) bool) {
		for path, b := range p.texts {
			if !yield(path, b) {
				return
			}
		}
		for i, e := range p.lines.all() {
			path := p.hookFullPath(i, e.id)
			if _, ok := p.texts[path]; ok {
				continue
			}
			if !yield(path, p.nearScalar(i, e.v)) {
				return
			}
		}
	}
}
