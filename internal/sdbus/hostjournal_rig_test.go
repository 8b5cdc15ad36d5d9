package sdbus_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// The journal of the rig's systemd, read through that systemd as an agent
// in a container reads its node's: a failed unit's lines come back, and
// the error of a start names them, with no journalctl of this process's.
func TestHostJournalctl(t *testing.T) {
	ctx := testContext(t)
	r, m, local := dialWithStateDir(ctx, t)
	m.RunJournalctl = m.HostJournalctl("/var/lib/hostprov", local)
	unit := "speaks-and-fails.service"
	if err := r.WriteUnit(unit, []byte("[Service]\nType=oneshot\nExecStart=/bin/sh -c 'echo the disk is not there; exit 4'\n")); err != nil {
		t.Fatal(err)
	}
	if err := m.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	err := m.Start(ctx, unit)
	if err == nil || !strings.Contains(err.Error(), "the disk is not there") {
		t.Fatalf("the start's error lacks the unit's output: %v", err)
	}
	out, err := m.RunJournalctl(ctx, "--no-pager", "-u", unit, "-o", "cat")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "the disk is not there") {
		t.Errorf("journalctl -u %s on the rig:\n%s", unit, out)
	}
	// What journalctl says on its standard error is the error.
	if _, err := m.RunJournalctl(ctx, "--no-such-option"); err == nil || !strings.Contains(err.Error(), "no-such-option") {
		t.Errorf("a failing journalctl: %v", err)
	}
	// Nothing is left behind.
	if left, _ := filepath.Glob(filepath.Join(local, ".hostprov-*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
