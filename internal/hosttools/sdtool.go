// Package hosttools reaches the real systemd's offline tools from tests.
//
// Its helpers (Verify, Escape, Unavailable) run the host's own systemd tools,
// so that tests prove things against what systemd really accepts rather than
// against a model of it. A helper that cannot run skips its test, except
// under CI=true, where a missing tool is a broken CI machine and fails the
// test instead. Connecting to a running manager is production code and lives
// in internal/sdbus.
package hosttools

import (
	"fmt"
	"os"
	"testing"
)

// Unavailable ends a test that cannot run on this machine: it skips with the
// reason, or, when the environment says CI=true, fails with it. CI must not
// quietly skip the tests that prove hostprov against real systemd, and a
// developer's laptop without root or systemd should not report failures.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: this test must run here; .ci/setup installs what it needs)", reason)
	}
	t.Skipf("skipped: %s", reason)
}
