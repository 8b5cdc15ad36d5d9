package pipeline

import "testing"

// BenchmarkHugeSpec measures reading and refusing a 50 MB spec: time and
// memory must stay bounded (the read stops one byte past the limit).
func BenchmarkHugeSpec(b *testing.B) {
	spec := hugeSpec(b)
	b.ReportAllocs()
	for b.Loop() {
		if r := loadFiles(b, Options{}, spec); !refusedForSize(r, spec) {
			b.Fatalf("not refused: %v", r.Diagnostics)
		}
	}
}
