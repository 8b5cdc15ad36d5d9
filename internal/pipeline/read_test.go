package pipeline

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

	"github.com/google/go-cmp/cmp"

	"github.com/hostprov/hostprov/internal/inputs"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/render"
)

// readAtMost reads a file whole in one buffer of its size, and never more
// than one byte past what a spec may have.
func TestReadAtMost(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{0, 1, 4096, hooks.MaxSize, hooks.MaxSize + 10} {
		data := bytes.Repeat([]byte("x"), n)
		p := filepath.Join(dir, "spec.yaml")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		got, err := readAtMost(f, fi)
		f.Close()
		want := data[:min(n, hooks.MaxSize+1)]
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: read %d, %v; want %d", n, len(got), err, len(want))
		}
		if n > 0 && n <= hooks.MaxSize && cap(got) != n+1 {
			t.Errorf("%d bytes: a buffer of %d, want one of the file's size and a byte more", n, cap(got))
		}
	}
}

// writeFiles writes files (name: contents) into dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A directory's specs are its *.yaml files, in lexical order, by their
// absolute names; hidden files, other files and directories are none.
// Files are read in the order given, "-" from stdin as "<stdin>".
func TestReadSpecs(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"b.yaml": "b", "a.yaml": "a", ".a.yaml": "hidden", "a.yaml~": "backup", "notes.txt": "notes"})
	if err := os.Mkdir(filepath.Join(dir, "c.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	got, err := ReadSpecs(Specs{Dir: ".", Files: []string{"notes.txt"}})
	want := []inputs.File{{Name: filepath.Join(dir, "a.yaml"), Data: []byte("a")}, {Name: filepath.Join(dir, "b.yaml"), Data: []byte("b")}}
	if err != nil || !cmp.Equal(got, want) {
		t.Errorf("-d: %v\n%s", err, cmp.Diff(want, got))
	}
	got, err = ReadSpecs(Specs{Files: []string{"b.yaml", "-", "a.yaml"}, Stdin: strings.NewReader("in")})
	want = []inputs.File{{Name: "b.yaml", Data: []byte("b")}, {Name: "<stdin>", Data: []byte("in")}, {Name: "a.yaml", Data: []byte("a")}}
	if err != nil || !cmp.Equal(got, want) {
		t.Errorf("-f: %v\n%s", err, cmp.Diff(want, got))
	}
}

// What was given wrong is a *ReadError that says which input and what is
// wrong with it; a read that fails is another error.
func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"huge.ign": strings.Repeat(" ", hooks.MaxSize+1)})
	t.Chdir(dir)
	if err := os.Mkdir("hooks.d", 0o755); err != nil {
		t.Fatal(err)
	}
	huge := fmt.Sprintf("larger than %d bytes", hooks.MaxSize)
	readConfig := func(name string, stdin io.Reader) error {
		_, _, err := ReadConfig(name, stdin)
		return err
	}
	for _, tc := range []struct {
		read func() error
		want ReadError
		text string
	}{
		{func() error { _, err := ReadSpecs(Specs{Files: []string{"missing.yaml"}}); return err },
			ReadError{SpecFile, NotFound, "missing.yaml"}, "missing.yaml: no such file"},
		{func() error { _, err := ReadSpecs(Specs{Files: []string{"hooks.d"}}); return err },
			ReadError{SpecFile, IsDir, "hooks.d"}, "hooks.d is a directory"},
		{func() error { _, err := ReadSpecs(Specs{Dir: "missing.d"}); return err },
			ReadError{SpecDir, NotFound, "missing.d"}, "missing.d: no such directory"},
		{func() error { _, err := ReadMerge([]string{"missing.ign"}); return err },
			ReadError{MergeConfig, NotFound, "missing.ign"}, "missing.ign: no such file"},
		{func() error { _, err := ReadMerge([]string{"hooks.d"}); return err },
			ReadError{MergeConfig, IsDir, "hooks.d"}, "hooks.d is a directory"},
		{func() error { _, err := ReadMerge([]string{"huge.ign"}); return err },
			ReadError{MergeConfig, TooLarge, "huge.ign"}, "huge.ign: " + huge},
		{func() error { return readConfig("missing.bu", nil) },
			ReadError{ImportConfig, NotFound, "missing.bu"}, "missing.bu: no such file"},
		{func() error { return readConfig("hooks.d", nil) },
			ReadError{ImportConfig, IsDir, "hooks.d"}, "hooks.d is a directory"},
		{func() error { return readConfig("huge.ign", nil) },
			ReadError{ImportConfig, TooLarge, "huge.ign"}, "huge.ign: " + huge},
		{func() error { return readConfig("-", strings.NewReader(strings.Repeat(" ", hooks.MaxSize+1))) },
			ReadError{ImportConfig, TooLarge, "<stdin>"}, "<stdin>: " + huge},
	} {
		err := tc.read()
		var re *ReadError
		if !errors.As(err, &re) || *re != tc.want || err.Error() != tc.text {
			t.Errorf("got %#v (%v), want %#v (%s)", err, err, tc.want, tc.text)
		}
	}
	broken := errors.New("broken pipe")
	for _, err := range []error{
		func() error {
			_, err := ReadSpecs(Specs{Files: []string{"-"}, Stdin: iotest.ErrReader(broken)})
			return err
		}(),
		readConfig("-", iotest.ErrReader(broken)),
	} {
		var re *ReadError
		if errors.As(err, &re) || err == nil || err.Error() != "reading standard input: broken pipe" {
			t.Errorf("a broken stdin: %#v, want the failure to read it", err)
		}
	}
}

// A config to merge or import is placed in its file's directory, which its
// relative references are read from; one from stdin in the working
// directory.
func TestReadConfigDirs(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, filepath.Join(dir, "sub"), map[string]string{"user.ign": "{}"})
	t.Chdir(dir)
	got, err := ReadMerge([]string{"sub/user.ign"})
	want := []render.MergeFile{{Name: "sub/user.ign", Data: []byte("{}"), Dir: filepath.Join(dir, "sub")}}
	if err != nil || !cmp.Equal(got, want) {
		t.Errorf("--merge: %v\n%s", err, cmp.Diff(want, got))
	}
	data, cdir, err := ReadConfig("sub/user.ign", nil)
	if err != nil || string(data) != "{}" || cdir != filepath.Join(dir, "sub") {
		t.Errorf("a config file: %q in %q, %v", data, cdir, err)
	}
	data, cdir, err = ReadConfig("-", strings.NewReader("#cloud-config\n"))
	if err != nil || string(data) != "#cloud-config\n" || cdir != "." {
		t.Errorf("a config on stdin: %q in %q, %v", data, cdir, err)
	}
}

// hugeSpec writes a syntactically valid spec of about 50 MB.
func hugeSpec(tb testing.TB) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "huge.yaml")
	var b bytes.Buffer
	b.WriteString("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n")
	for i := 0; b.Len() < 50<<20; i++ {
		fmt.Fprintf(&b, "- name: hook-%d\n  exec: [/bin/echo, %q]\n", i, strings.Repeat("x", 200))
	}
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

// loadFiles reads the spec files and runs the pipeline on them.
func loadFiles(tb testing.TB, opts Options, files ...string) *Result {
	tb.Helper()
	in, err := ReadSpecs(Specs{Files: files})
	if err != nil {
		tb.Fatal(err)
	}
	r, err := Load(Files(in), opts)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// refusedForSize reports whether r is only the error that the spec p is
// too large, at its first line, with nothing rendered.
func refusedForSize(r *Result, p string) bool {
	return len(r.Diagnostics) == 1 && r.Diagnostics[0].Severity == hooks.Error &&
		strings.HasPrefix(r.Diagnostics[0].String(), p+":1:1: error: the spec is") &&
		r.Units == nil && r.Sets == nil
}

// TestHugeSpec checks that a 50 MB spec is read only up to the limit and
// refused with a positioned error, with nothing to write.
func TestHugeSpec(t *testing.T) {
	spec := hugeSpec(t)
	r := loadFiles(t, Options{}, spec)
	if !refusedForSize(r, spec) {
		t.Errorf("a 50 MB spec: %v, %d units", r.Diagnostics, len(r.Units))
	}
}

// TestHugeKopsManifest: kops manifests over the limit are refused as a
// spec is, not cut at the limit and parsed: a manifest of many documents
// could otherwise lose the last ones without a word. The first 17 MiB of
// this one hold a whole Cluster document, and the hooks of an
// InstanceGroup follow.
func TestHugeKopsManifest(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\nmetadata:\n  name: c.example.com\nspec:\n  kubernetesVersion: 1.30.0\n")
	for b.Len() < 17<<20 {
		b.WriteString("# " + strings.Repeat("x", 1000) + "\n")
	}
	b.WriteString("---\napiVersion: kops.k8s.io/v1alpha2\nkind: InstanceGroup\nmetadata:\n  name: nodes\nspec:\n  role: Node\n  hooks:\n  - name: late.service\n    manifest: |\n      Type=oneshot\n      ExecStart=/bin/true\n")
	p := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	r := loadFiles(t, Options{}, p)
	if !refusedForSize(r, p) {
		t.Errorf("17 MiB of kops manifests: %v, %d units", r.Diagnostics, len(r.Units))
	}
}
