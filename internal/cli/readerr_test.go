package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/hostprov/hostprov/pkg/hooks"
)

// TestReadProblems holds the words of each input the pipeline cannot
// read to the flag it came with, and its exit code: a usage error for a
// mistake in what was given, a failure for a read that failed.
func TestReadProblems(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yaml")
	sub := filepath.Join(dir, "hooks.d")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.ign")
	if err := os.WriteFile(huge, bytes.Repeat([]byte(" "), hooks.MaxSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	cluster := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(cluster, []byte("apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := iotest.ErrReader(errors.New("broken pipe"))
	for _, tc := range []struct {
		name  string
		args  []string
		stdin io.Reader
		code  int
		msg   string
	}{
		{"spec missing", []string{"render", "-f", missing}, nil, ExitInvalid,
			missing + ": no such file; give the hook spec with -f FILE (or -f - for standard input)"},
		{"spec a directory", []string{"render", "-f", sub}, nil, ExitInvalid,
			sub + " is a directory: -f reads one spec file; read every *.yaml file of a directory with -d " + sub},
		{"spec a directory, no -d", []string{"kops", "set-hooks", "--cluster", cluster, "-f", sub}, nil, ExitInvalid,
			sub + " is a directory: -f reads one spec file"},
		{"spec from a broken stdin", []string{"validate", "-f", "-"}, broken, ExitFailure,
			"reading standard input: broken pipe"},
		{"dir missing", []string{"validate", "-d", missing}, nil, ExitInvalid,
			missing + ": no such directory; give the directory of hook specs with -d DIR"},
		{"merge missing", []string{"render", "--format", "ignition", "--merge", missing}, nil, ExitInvalid,
			"--merge " + missing + ": no such file"},
		{"merge a directory", []string{"render", "--format", "ignition", "--merge", sub}, nil, ExitInvalid,
			"--merge " + sub + " is a directory: give one config file, and --merge again for each other"},
		{"merge too large", []string{"render", "--format", "ignition", "--merge", huge}, nil, ExitInvalid,
			fmt.Sprintf("--merge %s: larger than %d bytes", huge, hooks.MaxSize)},
		{"config missing", []string{"import", missing}, nil, ExitInvalid,
			missing + ": no such file"},
		{"config a directory", []string{"import", sub}, nil, ExitInvalid,
			sub + " is a directory: import reads one config file"},
		{"config too large", []string{"import", huge}, nil, ExitInvalid,
			fmt.Sprintf("%s: larger than %d bytes", huge, hooks.MaxSize)},
		{"config too large on stdin", []string{"import", "-"}, bytes.NewReader(make([]byte, hooks.MaxSize+1)), ExitInvalid,
			fmt.Sprintf("<stdin>: larger than %d bytes", hooks.MaxSize)},
		{"config from a broken stdin", []string{"import", "-"}, broken, ExitFailure,
			"reading standard input: broken pipe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdin := tc.stdin
			if stdin == nil {
				stdin = strings.NewReader("")
			}
			var stdout, stderr bytes.Buffer
			code := Run(tc.args, stdin, &stdout, &stderr)
			if want := "hostprov: " + tc.msg + "\n"; code != tc.code || stderr.String() != want {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d, stderr:\n%s", code, stderr.String(), tc.code, want)
			}
		})
	}
}

// TestHugeSpecWritesNothing: a spec past the size limit is refused by
// render as invalid input, at its first line, and nothing is written; the
// pipeline's own tests hold the refusal, this one the command's exit code
// and its output directory.
func TestHugeSpecWritesNothing(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "huge.yaml")
	head := "apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n- name: a.service\n  exec: [/bin/true]\n"
	pad := bytes.Repeat([]byte("#"+strings.Repeat("x", 99)+"\n"), hooks.MaxSize/100+1)
	if err := os.WriteFile(spec, append([]byte(head), pad...), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "units")
	var stdout, stderr bytes.Buffer
	code := Run([]string{"render", "-f", spec, "--format", "dir", "--out", out}, strings.NewReader(""), &stdout, &stderr)
	if code != ExitInvalid {
		t.Errorf("exit %d, want %d", code, ExitInvalid)
	}
	if want := spec + ":1:1: error: the spec is"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
	}
	if _, err := os.Lstat(out); !os.IsNotExist(err) {
		t.Error("render wrote output for a spec it refused")
	}
}
