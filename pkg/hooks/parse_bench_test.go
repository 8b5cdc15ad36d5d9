package hooks

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/hostprov/hostprov/internal/benchspec"
)

// BenchmarkParse measures Parse of the benchmark's spec alone, with its
// allocations and the heap the parsed Spec keeps alive (live-B/op): what
// a render holds of the spec while it builds the units.
func BenchmarkParse(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		data := benchspec.Spec(n)
		b.Run(fmt.Sprintf("hooks=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			var live uint64
			for b.Loop() {
				var before, after runtime.MemStats
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&before)
				b.StartTimer()
				spec, diags := Parse("bench.yaml", data)
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.StartTimer()
				if diags.HasErrors(false) || len(spec.Hooks) != n {
					b.Fatalf("%d hooks: %v", len(spec.Hooks), diags)
				}
				live = after.HeapAlloc - before.HeapAlloc
				runtime.KeepAlive(spec)
			}
			b.ReportMetric(float64(live), "live-B/op")
		})
	}
}
