package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/internal/benchspec"
)

// BenchmarkRender measures a whole render of a spec of many hooks to
// Ignition and a validate of it, as the command runs them, from the file
// to the written config: what benchbutane compares with Butane.
func BenchmarkRender(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		spec := filepath.Join(b.TempDir(), "hooks.yaml")
		if err := os.WriteFile(spec, benchspec.Spec(n), 0o644); err != nil {
			b.Fatal(err)
		}
		for _, args := range [][]string{{"render", "-f", spec, "--format", "ignition"}, {"validate", "-f", spec}} {
			b.Run(fmt.Sprintf("%s/hooks=%d", args[0], n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					var stdout, stderr bytes.Buffer
					if code := Run(args, strings.NewReader(""), &stdout, &stderr); code != ExitOK {
						b.Fatalf("exit %d: %s", code, stderr.String())
					}
				}
			})
		}
	}
}
