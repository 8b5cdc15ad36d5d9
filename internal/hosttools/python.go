package hosttools

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// CloudInitPython returns the Python interpreter cloud-init runs under
// (from the #! line of the cloud-init program), so that a test reads
// cloud-config with cloud-init's own libraries and code. Without
// cloud-init the test is skipped, or fails under CI=true (Unavailable).
func CloudInitPython(t testing.TB) string {
	t.Helper()
	ci, err := exec.LookPath("cloud-init")
	if err != nil {
		Unavailable(t, "cloud-init not found (Debian package cloud-init)")
	}
	f, err := os.Open(ci)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	py, ok := strings.CutPrefix(strings.TrimSpace(line), "#!")
	if !ok || !strings.Contains(py, "python") {
		Unavailable(t, "%s is not a Python script: %q", ci, line)
	}
	return strings.Fields(py)[0]
}

// RunPython runs a Python program with input on its standard input, in
// "/" and with a minimal environment, and returns its standard output; a
// failure fails the test with the program's standard error.
func RunPython(t testing.TB, py, program string, input []byte) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-c", program)
	cmd.Stdin = bytes.NewReader(input)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "PYTHONIOENCODING=utf-8"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", py, err, stderr.String())
	}
	return out
}
