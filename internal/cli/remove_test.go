package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRemoveExitCodes: a remove without names, with names and --all, or
// with a name hostprov did not install is invalid input (exit code 2), and
// removes nothing.
func TestRemoveExitCodes(t *testing.T) {
	n := newLiveNode(t)
	if code, _, e := n.run("apply"); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s", code, e)
	}
	unit := filepath.Join(n.unitDir, "hello.service")
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"remove"}, "name the hooks to remove (hostprov status lists them), or --all"},
		{[]string{"remove", "hello", "--all"}, "not both"},
		{[]string{"remove", "nonexist"}, "hint: installed: hello"},
		{[]string{"remove", "hello", "nonexist"}, "nothing was removed"},
		{[]string{"remove", "--dry-run", "nonexist"}, "no hook or unit named nonexist"},
	} {
		code, _, e := n.run(tc.args...)
		if code != ExitInvalid || !strings.Contains(e, tc.err) {
			t.Errorf("%s: exit %d, want %d and %q\n%s", strings.Join(tc.args, " "), code, ExitInvalid, tc.err, e)
		}
		if _, err := os.Stat(unit); err != nil {
			t.Fatalf("%s removed the unit: %v", strings.Join(tc.args, " "), err)
		}
	}
	if got := strings.Join(n.sd.Log(), "; "); strings.Contains(got, "stop") || strings.Contains(got, "disable") {
		t.Errorf("systemd was asked to remove: %s", got)
	}
}
