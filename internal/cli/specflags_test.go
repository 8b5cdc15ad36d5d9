package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/internal/golden"
)

// diagLine is the form of a diagnostic's first line: file:line:col, the
// severity, then the path into the spec and the message.
var diagLine = regexp.MustCompile(`^([^:]+):(\d+):(\d+): (error|warning): `)

// TestBadInput runs every spec of the bad-input catalogue in
// testdata/bad through validate --strict and render, and checks that each
// exits 2, writes nothing, and reports exactly the diagnostics recorded in
// its .want file (regenerated with -update and reviewed in the diff).
func TestBadInput(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "testdata", "bad"))
	if err != nil {
		t.Fatal(err)
	}
	specs, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) < 60 {
		t.Fatalf("the catalogue has %d cases; it must keep at least 60", len(specs))
	}
	t.Chdir(dir)
	for _, spec := range specs {
		name := filepath.Base(spec)
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run([]string{"validate", "--strict", "-f", name}, strings.NewReader(""), &stdout, &stderr)
			if code != ExitInvalid {
				t.Errorf("validate --strict exits %d, want %d", code, ExitInvalid)
			}
			if stdout.Len() > 0 {
				t.Errorf("validate printed to stdout for an invalid spec:\n%s", stdout.String())
			}
			diags := 0
			for _, l := range strings.Split(stderr.String(), "\n") {
				if m := diagLine.FindStringSubmatch(l); m != nil {
					diags++
					if m[1] != name || m[2] == "0" || m[3] == "0" {
						t.Errorf("diagnostic without a valid position: %s", l)
					}
				} else if strings.HasPrefix(l, name+": error:") {
					diags++ // a problem of the whole file, such as an empty one
				}
			}
			if diags == 0 {
				t.Errorf("no diagnostic in:\n%s", stderr.String())
			}
			golden.Check(t, strings.TrimSuffix(name, ".yaml")+".want", []byte(fmt.Sprintf("exit %d\n%s", code, stderr.String())))

			// Render must refuse it as well and write nothing at all.
			out := filepath.Join(t.TempDir(), "units")
			stdout.Reset()
			stderr.Reset()
			if code := Run([]string{"render", "--strict", "-f", name, "--format", "dir", "--out", out}, strings.NewReader(""), &stdout, &stderr); code != ExitInvalid {
				t.Errorf("render exits %d, want %d", code, ExitInvalid)
			}
			if _, err := os.Lstat(out); !os.IsNotExist(err) {
				t.Errorf("render wrote %s for an invalid spec", out)
			}
			if code := Run([]string{"render", "--strict", "-f", name}, strings.NewReader(""), &stdout, &stderr); code != ExitInvalid || stdout.Len() > 0 {
				t.Errorf("render to Ignition exits %d and prints %d bytes, want exit %d and nothing", code, stdout.Len(), ExitInvalid)
			}
		})
	}
}
