//go:build !killpoints

package killpoint

// Enabled says whether this build has kill points.
const Enabled = false

// At marks a step of the given kind. It does nothing in a normal build.
func At(kind string) {}
