package render_test

import (
	"fmt"
	"testing"
	"time"

	butaneconfig "github.com/coreos/butane/config"
	"github.com/coreos/butane/config/common"

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

// benchUnits builds the units of benchSpec(n) once, outside the timings.
func benchUnits(b *testing.B, n int) ([]byte, []compile.Unit) {
	b.Helper()
	spec := benchSpec(n)
	r, diags := compile.Build("bench.yaml", spec, compile.Options{})
	us := r.Units
	if diags.HasErrors(false) || len(us) != n {
		b.Fatalf("%d units, %v", len(us), diags)
	}
	return spec, us
}

// BenchmarkOutput measures writing built units in each format, with
// allocations: the part of a render that differs between formats
// (BenchmarkBuild measures the part they share).
func BenchmarkOutput(b *testing.B) {
	_, us := benchUnits(b, 10000)
	for _, o := range outputs {
		b.Run(o.name+"/hooks=10000", func(b *testing.B) {
			b.ReportAllocs()
			var size int
			for b.Loop() {
				out, err := o.out(us)
				if err != nil {
					b.Fatal(err)
				}
				size = len(out)
			}
			b.ReportMetric(float64(size), "bytes/config")
		})
	}
}

// BenchmarkIgnitionVsButane measures, in the same run and on the same
// units, what it costs hostprov to make an Ignition config and what it
// costs Butane's own TranslateBytes to make the same config from the
// equivalent Butane config. Each iteration times both and reports each
// per config: hostprov-ns for the whole pipeline from spec bytes (parse,
// check, generate, check units, write JSON, as TranslateBytes parses,
// validates, translates and writes JSON), hostprov-output-ns for writing
// the JSON from built units, butane-ns for TranslateBytes, and their ratio.
// It asserts nothing about time: the figures are for people to read.
func BenchmarkIgnitionVsButane(b *testing.B) {
	for _, n := range []int{100, 10000} {
		spec, us := benchUnits(b, n)
		bu, err := butane.Render(us, butane.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("hooks=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var pipeline, output, translate time.Duration
			for b.Loop() {
				t0 := time.Now()
				r, _ := compile.Build("bench.yaml", spec, compile.Options{})
				built := r.Units
				if _, err := ignition.Render(built, ignition.Options{}); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if _, err := ignition.Render(us, ignition.Options{}); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				if _, rpt, err := butaneconfig.TranslateBytes(bu, common.TranslateBytesOptions{}); err != nil || len(rpt.Entries) > 0 {
					b.Fatalf("Butane: %v\n%s", err, rpt)
				}
				t3 := time.Now()
				pipeline += t1.Sub(t0)
				output += t2.Sub(t1)
				translate += t3.Sub(t2)
			}
			runs := float64(b.N)
			b.ReportMetric(float64(pipeline.Nanoseconds())/runs, "hostprov-ns/config")
			b.ReportMetric(float64(output.Nanoseconds())/runs, "hostprov-output-ns/config")
			b.ReportMetric(float64(translate.Nanoseconds())/runs, "butane-ns/config")
			b.ReportMetric(float64(translate)/float64(pipeline), "butane/hostprov")
		})
	}
}
