// Package render writes the units and storage that package compile builds
// from a hook spec as outputs, and merges a user's own config into them.
// It builds nothing itself: every output is written from the same
// []compile.Unit, so a unit's bytes are the same in all of them.
//
// This package holds the Ignition and Butane outputs and what the outputs
// share: the unit files of a spec (Files, from internal/unitfiles, which
// links no output's library), the merge inputs (MergeFile) and the helpers
// the merges use to say where an entry was made. The other
// outputs are rooms of their own below this directory: cloudinit
// (cloud-init user data), kopshooks (kops hooks), listing (the plain
// listing) and unitdir (a directory of unit files).
package render
