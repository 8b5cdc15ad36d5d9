package compile_test

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/internal/benchspec"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// benchSpec is a spec of n hooks of the kinds people write.
func benchSpec(n int) []byte { return benchspec.Spec(n) }

// BenchmarkBuild measures the pipeline from spec bytes to checked units
// (parse, validate, generate, check), with allocations.
func BenchmarkBuild(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		spec := benchSpec(n)
		b.Run(fmt.Sprintf("hooks=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(spec)))
			for b.Loop() {
				r, diags := compile.Build("bench.yaml", spec, compile.Options{})
				us := r.Units
				if diags.HasErrors(false) || len(us) != n {
					b.Fatalf("%d units, %v", len(us), diags)
				}
			}
		})
	}
}

// BenchmarkParse measures parsing and checking the spec alone.
func BenchmarkParse(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		spec := benchSpec(n)
		b.Run(fmt.Sprintf("hooks=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(spec)))
			for b.Loop() {
				if _, diags := hooks.Parse("bench.yaml", spec); diags.HasErrors(false) {
					b.Fatal(diags)
				}
			}
		})
	}
}

// errorSpec is a spec of n hooks that each have an error the parser
// reports (exec written as a string, not a list), with fields around it of
// the kinds people write.
func errorSpec(n int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `- name: hook-%d
  description: Hook number %d
  type: oneshot
  exec: /usr/local/bin/prepare --id %d
  env: {HOOK_ID: "%d"}
  after: [network-online.target]
`, i, i, i, i)
	}
	return []byte(b.String())
}

// BenchmarkBuildErrors measures the pipeline on specs in which every hook
// has an error: the diagnostics of one hook must cost the same however
// many hooks the spec has.
func BenchmarkBuildErrors(b *testing.B) {
	for _, n := range []int{1000, 10000, 40000} {
		spec := errorSpec(n)
		b.Run(fmt.Sprintf("hooks=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(spec)))
			for b.Loop() {
				if _, diags := compile.Build("bench.yaml", spec, compile.Options{}); len(diags) != n {
					b.Fatalf("%d diagnostics, want %d", len(diags), n)
				}
			}
		})
	}
}

// maxSpec is the largest valid spec Parse takes (hooks.MaxSize bytes, or
// just under) made of hooks written by hook, and its number of hooks.
func maxSpec(hook func(i int) string) ([]byte, int) {
	var b bytes.Buffer
	b.WriteString("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n")
	n := 0
	for ; ; n++ {
		h := hook(n)
		if b.Len()+len(h) > hooks.MaxSize {
			break
		}
		b.WriteString(h)
	}
	return b.Bytes(), n
}

// BenchmarkBuildMaxSize measures the pipeline on the largest valid specs:
// of the smallest hooks, so that it has as many as a spec can (the worst
// case for every cost that grows with the hooks), and of hooks that each
// have a warning (a mistyped directive, whose hint searches systemd's
// vocabulary). It reports the heap the result keeps (retained-MiB): what
// a caller holds while it writes the output.
func BenchmarkBuildMaxSize(b *testing.B) {
	for _, c := range []struct {
		name     string
		hook     func(i int) string
		warnings bool
	}{
		{"plain", func(i int) string { return fmt.Sprintf("- name: h%d\n  exec: [/bin/true]\n", i) }, false},
		{"warnings", func(i int) string {
			return fmt.Sprintf("- name: h%d\n  exec: [/bin/true]\n  directives:\n    Service: [ExecStrat=/bin/true]\n", i)
		}, true},
	} {
		spec, n := maxSpec(c.hook)
		b.Run(fmt.Sprintf("%s/hooks=%d", c.name, n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(spec)))
			var retained uint64
			for b.Loop() {
				before := heapInUse()
				r, diags := compile.Build("bench.yaml", spec, compile.Options{})
				us := r.Units
				if diags.HasErrors(false) || len(us) != n || (len(diags) == n) != c.warnings {
					b.Fatalf("%d units and %d diagnostics for %d hooks", len(us), len(diags), n)
				}
				retained = heapInUse() - before
				runtime.KeepAlive(us)
			}
			b.ReportMetric(float64(retained)/(1<<20), "retained-MiB")
		})
	}
}

// heapInUse is the size of the live heap, after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
