package sdbus_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/internal/sdbus"
	"github.com/hostprov/hostprov/internal/systemdtest"
)

// TestRefusals provokes systemd's refusals in a rig and checks each one's
// classification and advice.
func TestRefusals(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	r := systemdtest.Start(t)
	m := dial(ctx, t, r)

	unit := "[Service]\nType=oneshot\nExecStart=/bin/true\n\n[Install]\nWantedBy=multi-user.target\n"
	for _, name := range []string{"plain.service", "to-mask.service"} {
		if err := r.WriteUnit(name, []byte(unit)); err != nil {
			t.Fatal(err)
		}
	}
	// Its .wants directory exists already, unlike multi-user.target's:
	// systemd fails differently in the two cases.
	if err := r.WriteUnit("timers.target.wants/.keep", nil); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteUnit("timed.service", []byte(strings.Replace(unit, "multi-user.target", "timers.target", 1))); err != nil {
		t.Fatal(err)
	}
	if err := m.Reload(ctx); err != nil {
		t.Fatal(err)
	}

	check := func(what string, err, cause error, want ...string) {
		t.Helper()
		if !errors.Is(err, cause) {
			t.Errorf("%s: %v; want cause %v", what, err, cause)
			return
		}
		t.Logf("%s: %v", what, err)
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", what, err, w)
			}
		}
	}

	err := m.Start(ctx, "no-such.service")
	check("start a unit without a file", err, sdbus.ErrNoSuchUnit, "start no-such.service: no such unit", "daemon-reload")
	_, err = m.Enable(ctx, []string{"no-such.service"})
	check("enable a unit without a file", err, sdbus.ErrNoSuchUnit, "enable no-such.service: no such unit")

	// Masking a unit whose file is in /etc would have to replace the file.
	_, err = m.Mask(ctx, []string{"plain.service"})
	check("mask a unit file", err, sdbus.ErrUnitExists, "mask plain.service: a unit file is in the way")
	if data, err := os.ReadFile(filepath.Join(r.UnitDir, "plain.service")); err != nil || string(data) != unit {
		t.Errorf("mask touched the unit file: %q, %v", data, err)
	}

	// A masked unit cannot start. to-mask.service's file moves to /run, so
	// that the mask link in /etc has room.
	if err := os.MkdirAll(filepath.Join(r.Root, "run/systemd/system"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(r.UnitDir, "to-mask.service"), filepath.Join(r.Root, "run/systemd/system/to-mask.service")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Mask(ctx, []string{"to-mask.service"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	err = m.Start(ctx, "to-mask.service")
	check("start a masked unit", err, sdbus.ErrMasked, "start to-mask.service: unit is masked", "Unmask it")

	// A read-only /etc: enabling cannot make its link.
	if _, err := r.Run(ctx, "mount", "-o", "bind,ro", "/etc/systemd/system", "/etc/systemd/system"); err != nil {
		t.Fatal(err)
	}
	_, err = m.Enable(ctx, []string{"plain.service"})
	check("enable with /etc read-only, no .wants directory", err, sdbus.ErrReadOnly, "enable plain.service: the unit directory is read-only", "Remount /etc read-write")
	_, err = m.Enable(ctx, []string{"timed.service"})
	check("enable with /etc read-only", err, sdbus.ErrReadOnly, "enable timed.service: the unit directory is read-only")
	for _, link := range []string{"multi-user.target.wants/plain.service", "timers.target.wants/timed.service"} {
		if _, err := os.Lstat(filepath.Join(r.UnitDir, link)); err == nil {
			t.Errorf("enable made %s in a read-only directory", link)
		}
	}
}
