//go:build !linux

package rig

import (
	"testing"

	"github.com/hostprov/hostprov/internal/sdtool"
)

// Start boots a real systemd on Linux; elsewhere it skips the test, or fails
// it under CI=true.
func Start(t testing.TB) *Rig {
	t.Helper()
	sdtool.Unavailable(t, "rig: booting systemd needs Linux")
	return nil
}
