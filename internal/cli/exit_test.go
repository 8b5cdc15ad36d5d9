package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExitCodes checks the documented exit codes: 0 success, 1 failure to
// do the work, 2 invalid input or usage.
func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", "apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n- name: a\n  exec: [/bin/true]\n")
	bad := write("bad.yaml", "apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n- name: a/b\n  exec: [/bin/true]\n")
	warn := write("warn.yaml", "apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n- name: a\n  useRawManifest: true\n  manifest: \"[Service]\\nExecStart=/bin/true\\n\"\n")
	unit := write("bad.service", "[Unit]\nno equals here\n")
	notADir := write("file", "")

	for _, tc := range []struct {
		args []string
		code int
		err  string // a fragment of stderr
	}{
		{[]string{"render", "-f", good}, ExitOK, ""},
		{[]string{"validate", "-f", warn}, ExitOK, "warning"},
		{[]string{"validate", "-f", warn, "--strict"}, ExitInvalid, "fatal under --strict"},
		{[]string{"render", "-f", bad}, ExitInvalid, "nothing written"},
		{[]string{"render", "-f", filepath.Join(dir, "missing.yaml")}, ExitInvalid, "no such file"},
		{[]string{"render", "-f", good, "--format", "xml"}, ExitInvalid, "unknown --format"},
		{[]string{"render", "--bogus"}, ExitInvalid, "unknown flag"},
		{[]string{"frobnicate"}, ExitInvalid, "unknown command"},
		{[]string{"render", "-f", good, "--format", "dir", "--out", filepath.Join(notADir, "sub")}, ExitFailure, "writing units"},
		{[]string{"fmt", unit}, ExitInvalid, "bad.service:2:"},
		{[]string{"version"}, ExitOK, ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(tc.args, strings.NewReader(""), &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", code, tc.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.err) {
				t.Errorf("stderr lacks %q:\n%s", tc.err, stderr.String())
			}
		})
	}
}
