package render

import (
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render/internal/unitfiles"
)

// Files returns every file of the units relative to a unit directory, in a
// stable order: NAME for unit files and NAME.d/FILE for drop-ins. Masks
// are links, not files, and are not included. It is the public face of
// what the outputs below this package read (they link no Butane or
// Ignition library through it).
func Files(us []compile.Unit) []File { return unitfiles.Files(us) }

// File is one file of a rendered unit directory.
type File = unitfiles.File
