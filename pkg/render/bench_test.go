package render_test

import (
	"fmt"
	"testing"

	"github.com/hostprov/hostprov/internal/benchspec"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render/butane"
	"github.com/hostprov/hostprov/pkg/render/cloudinit"
	"github.com/hostprov/hostprov/pkg/render/ignition"
	"github.com/hostprov/hostprov/pkg/render/kopshooks"
)

// benchSpec is a spec of n hooks of the kinds people write.
func benchSpec(n int) []byte { return benchspec.Spec(n) }

// outputs are the formats of a render, each written from built units.
var outputs = []struct {
	name string
	out  func([]compile.Unit) ([]byte, error)
}{
	{"ignition", func(us []compile.Unit) ([]byte, error) { return ignition.Render(us, ignition.Options{}) }},
	{"butane", func(us []compile.Unit) ([]byte, error) { return butane.Render(us, butane.Options{}) }},
	{"cloud-init", func(us []compile.Unit) ([]byte, error) { return cloudinit.Render(us, cloudinit.Options{}) }},
	{"kops", func(us []compile.Unit) ([]byte, error) { return kopshooks.Render(us, kopshooks.Options{}) }},
}

// BenchmarkRender measures the whole render of a spec to each format: the
// pipeline BenchmarkBuild measures, then the output BenchmarkOutput does.
func BenchmarkRender(b *testing.B) {
	for _, o := range outputs {
		for _, n := range []int{10, 1000, 10000} {
			spec := benchSpec(n)
			b.Run(fmt.Sprintf("%s/hooks=%d", o.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					r, _ := compile.Build("bench.yaml", spec, compile.Options{})
					us := r.Units
					if _, err := o.out(us); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
