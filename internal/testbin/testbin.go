// Package testbin gives the tests that run the real hostprov binary (in a
// rig, as a node runs it, or to send it signals) that binary, built once
// per run rather than once per test.
//
// make test builds every variant the tests use into bin/test before it
// runs them and says where with HOSTPROV_TEST_BIN_DIR: then Hostprov only
// returns a path, and no test spends its own time limit compiling. Run
// without make (go test ./pkg/apply), Hostprov builds the variant itself
// into the module's bin/test, under a lock so that test processes running
// in parallel build it once, with a limit long enough for a cold build
// cache on a small machine; go build leaves an up-to-date binary alone, so
// the next test process pays only the check.
package testbin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hostprov/hostprov/internal/hosttools"
)

// EnvDir names the directory in which make test has built the variants.
const EnvDir = "HOSTPROV_TEST_BIN_DIR"

// BuildLimit bounds one in-test build: compiling the Kubernetes libraries
// of the kube variant from an empty cache takes some 15 minutes on two
// cores, and tests in parallel slow it further.
const BuildLimit = 40 * time.Minute

// Name is the file name of the variant built with tags: hostprov, or
// hostprov-TAG1-TAG2 in the order given. The Makefile uses the same names.
func Name(tags ...string) string {
	if len(tags) == 0 {
		return "hostprov"
	}
	return "hostprov-" + strings.Join(tags, "-")
}

var (
	mu    sync.Mutex
	built = map[string]string{} // by Name: the path, once built in this process
)

// Hostprov returns the path of cmd/hostprov built as a node installs it
// (static: CGO_ENABLED=0, -trimpath) with the build tags (kube: the
// agent's and controller's commands; killpoints: the crash tests' build).
// A test that cannot build it fails; without the go command it skips, or
// fails under CI=true.
func Hostprov(t testing.TB, tags ...string) string {
	t.Helper()
	name := Name(tags...)
	if dir := os.Getenv(EnvDir); dir != "" {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s=%s but %s is not there (make test builds it; see the Makefile's test-bins): %v", EnvDir, dir, name, err)
		}
		return p
	}
	mu.Lock()
	defer mu.Unlock()
	if p, ok := built[name]; ok {
		return p
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		hosttools.Unavailable(t, "the go command is needed to build %s for this test: %v", name, err)
	}
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	p, err := build(goTool, root, name, tags)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("testbin: %s ready in %v", name, time.Since(start).Round(time.Millisecond))
	built[name] = p
	return p
}

// build runs go build for one variant into root/bin/test, holding a lock
// on that directory so that two test processes do not write one file.
func build(goTool, root, name string, tags []string) (string, error) {
	dir := filepath.Join(root, "bin", "test")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)

	out := filepath.Join(dir, name)
	ctx, cancel := context.WithTimeout(context.Background(), BuildLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, args(out, tags...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("not done within %v: %w", BuildLimit, err)
		}
		return "", fmt.Errorf("go %s: %v\n%s", strings.Join(cmd.Args[1:], " "), err, msg)
	}
	return out, nil
}

// args are the go command's arguments that build the variant with tags
// into out, from the module root.
func args(out string, tags ...string) []string {
	return []string{"build", "-trimpath", "-tags", strings.Join(tags, ","), "-o", out, "./cmd/hostprov"}
}

// ModuleRoot is the nearest directory above the working directory (a
// package's, under go test) that holds go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testbin: no go.mod above the working directory")
		}
		dir = parent
	}
}
