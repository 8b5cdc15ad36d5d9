// Package golden compares test output with files under testdata/ and
// rewrites them when the tests run with -update:
//
//	go test ./... -update
//
// Every package with tests imports it (directly or through a helper), so that
// the -update flag is defined in every test binary that `go test ./...` runs.
// Goldens change only that way, never by hand or through the environment, and
// the change is reviewed in the diff.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/diff"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/ with the current output")

// Updating reports whether the tests run with -update.
func Updating() bool { return *update }

// Check compares got with the golden file at path, or, with -update, writes
// got to it. A difference fails the test with a unified diff.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run 'go test ./... -update' to create it, then review the diff)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run 'go test ./... -update' to accept, then review the diff):\n%s",
			path, diff.Diff(path, want, "got", got))
	}
}
