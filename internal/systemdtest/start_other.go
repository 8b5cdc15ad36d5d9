//go:build !linux

package systemdtest

import (
	"errors"
	"testing"

	"github.com/hostprov/hostprov/internal/hosttools"
)

// Start boots a real systemd on Linux; elsewhere it skips the test, or fails
// it under CI=true.
func Start(t testing.TB) *Rig {
	t.Helper()
	hosttools.Unavailable(t, "rig: booting systemd needs Linux")
	return nil
}

// boot is the booted systemd of a rig, on Linux.
type boot struct{}

// Reboot needs a rig, which needs Linux.
func (r *Rig) Reboot() error { return errors.New("rig: booting systemd needs Linux") }
