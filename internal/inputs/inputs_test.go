package inputs_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	_ "github.com/hostprov/hostprov/internal/golden" // defines -update
	"github.com/hostprov/hostprov/internal/inputs"
)

// TestBuildID: the build ID read from the running test binary is the one
// the Go toolchain reports for it.
func TestBuildID(t *testing.T) {
	got := inputs.BuildID()
	if got == "" {
		t.Fatal("no build ID read from the test binary")
	}
	exe, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to compare with: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(exe, "tool", "buildid", self).Output()
	if err != nil {
		t.Fatalf("go tool buildid: %v", err)
	}
	if want := strings.TrimSpace(string(out)); got != want {
		t.Errorf("build ID %q, go tool buildid says %q", got, want)
	}
}

// TestFingerprint: any change of a file's name or bytes, of a setting, or of
// how parts are split, changes the fingerprint.
func TestFingerprint(t *testing.T) {
	base := inputs.Fingerprint([]string{"--role=Node"}, inputs.File{Name: "a.yaml", Data: []byte("x")})
	if !strings.HasPrefix(base, "sha256:") || len(base) != len("sha256:")+64 {
		t.Fatalf("fingerprint %q", base)
	}
	if again := inputs.Fingerprint([]string{"--role=Node"}, inputs.File{Name: "a.yaml", Data: []byte("x")}); again != base {
		t.Errorf("not stable: %s, then %s", base, again)
	}
	others := map[string]string{
		"bytes":    inputs.Fingerprint([]string{"--role=Node"}, inputs.File{Name: "a.yaml", Data: []byte("y")}),
		"name":     inputs.Fingerprint([]string{"--role=Node"}, inputs.File{Name: "b.yaml", Data: []byte("x")}),
		"setting":  inputs.Fingerprint([]string{"--role=ControlPlane"}, inputs.File{Name: "a.yaml", Data: []byte("x")}),
		"none":     inputs.Fingerprint(nil, inputs.File{Name: "a.yaml", Data: []byte("x")}),
		"split":    inputs.Fingerprint([]string{"--role=Node"}, inputs.File{Name: "a.yam", Data: []byte("lx")}),
		"two":      inputs.Fingerprint([]string{"--role=Node"}, inputs.File{Name: "a.yaml", Data: []byte("x")}, inputs.File{Name: "b.yaml"}),
		"settings": inputs.Fingerprint([]string{"--role=Node", ""}, inputs.File{Name: "a.yaml", Data: []byte("x")}),
	}
	for what, fp := range others {
		if fp == base {
			t.Errorf("another %s, the same fingerprint", what)
		}
	}
}
