package listing_test

import (
	"testing"

	"github.com/hostprov/hostprov/internal/golden"
	"github.com/hostprov/hostprov/pkg/render/internal/rendertest"
	"github.com/hostprov/hostprov/pkg/render/listing"
)

// TestGolden renders every golden spec and example to the unit listing and
// compares it with the files under testdata/golden.
func TestGolden(t *testing.T) {
	for name, path := range rendertest.GoldenSpecs(t) {
		t.Run(name, func(t *testing.T) {
			us := rendertest.Units(t, path)
			golden.Check(t, rendertest.Path("testdata", "golden", name+".units"), listing.Render(us))
		})
	}
}
