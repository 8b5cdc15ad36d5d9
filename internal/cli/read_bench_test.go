package cli

import (
	"bytes"
	"strings"
	"testing"
)

// BenchmarkHugeSpec measures refusing a 50 MB spec: time and memory must
// stay bounded (the read stops one byte past the limit).
func BenchmarkHugeSpec(b *testing.B) {
	spec := hugeSpec(b)
	b.ReportAllocs()
	for b.Loop() {
		var stdout, stderr bytes.Buffer
		if code := Run([]string{"validate", "-f", spec}, strings.NewReader(""), &stdout, &stderr); code != ExitInvalid {
			b.Fatalf("exit %d", code)
		}
	}
}
