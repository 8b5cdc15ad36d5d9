package fsutil_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/hostprov/hostprov/internal/fsutil"
	_ "github.com/hostprov/hostprov/internal/golden" // defines -update
)

// listDir returns the names in dir, hidden ones (temporary files) included.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

func TestWriteFiles(t *testing.T) {
	dir := t.TempDir()
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	// A file replaced, a new one, one in another directory, and a
	// symbolic link that must be replaced, not written through.
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("old a"), 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("target"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	files := []fsutil.File{
		{Path: filepath.Join(dir, "a"), Data: []byte("new a"), Perm: 0o644},
		{Path: filepath.Join(dir, "b"), Data: []byte("b"), Perm: 0o640},
		{Path: filepath.Join(sub, "c"), Data: []byte("c"), Perm: 0o644},
		{Path: filepath.Join(dir, "link"), Data: []byte("link"), Perm: 0o644},
	}
	n, err := fsutil.WriteFiles(files)
	if err != nil || n != len(files) {
		t.Fatalf("WriteFiles: %d, %v; want %d, nil", n, err, len(files))
	}
	for _, f := range files {
		fi, err := os.Lstat(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm() != f.Perm {
			t.Errorf("%s: mode %v, want a regular file with %v", f.Path, fi.Mode(), f.Perm)
		}
		if got, _ := os.ReadFile(f.Path); string(got) != string(f.Data) {
			t.Errorf("%s: %q, want %q", f.Path, got, f.Data)
		}
	}
	if got, _ := os.ReadFile(target); string(got) != "target" {
		t.Errorf("the link's target was written through: %q", got)
	}
	if got := strings.Join(listDir(t, dir), " "); got != "a b link sub target" {
		t.Errorf("directory holds %s; want the files and no temporary file", got)
	}
	if got := strings.Join(listDir(t, sub), " "); got != "c" {
		t.Errorf("sub holds %s", got)
	}
}

// TestWriteFilesFailsBeforeRenaming: a file that cannot be created (its
// directory is missing) fails the batch before any file is renamed.
func TestWriteFilesFailsBeforeRenaming(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("old a"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing", "c")
	n, err := fsutil.WriteFiles([]fsutil.File{
		{Path: filepath.Join(dir, "a"), Data: []byte("new a"), Perm: 0o644},
		{Path: filepath.Join(dir, "b"), Data: []byte("b"), Perm: 0o644},
		{Path: missing, Data: []byte("c"), Perm: 0o644},
	})
	var pe *fs.PathError
	if n != 0 || !errors.As(err, &pe) || pe.Path != missing || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("WriteFiles: %d, %v; want 0 and an error about %s not existing", n, err, missing)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a")); string(got) != "old a" {
		t.Errorf("a is %q; want it untouched", got)
	}
	if got := strings.Join(listDir(t, dir), " "); got != "a" {
		t.Errorf("directory holds %s; want a alone, no temporary file", got)
	}
}

// TestWriteFilesFailsRenaming: when the rename of the second file fails
// (a non-empty directory is in its place), the first is in place, the third
// untouched, and no temporary file is left.
func TestWriteFilesFailsRenaming(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "b")
	if err := os.MkdirAll(filepath.Join(blocker, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	n, err := fsutil.WriteFiles([]fsutil.File{
		{Path: filepath.Join(dir, "a"), Data: []byte("a"), Perm: 0o644},
		{Path: blocker, Data: []byte("b"), Perm: 0o644},
		{Path: filepath.Join(dir, "c"), Data: []byte("c"), Perm: 0o644},
	})
	var pe *fs.PathError
	if n != 1 || !errors.As(err, &pe) || pe.Path != blocker || pe.Op != "rename" {
		t.Fatalf("WriteFiles: %d, %v; want 1 and a rename error about %s", n, err, blocker)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a")); string(got) != "a" {
		t.Errorf("a is %q; want it written", got)
	}
	if got := strings.Join(listDir(t, dir), " "); got != "a b" {
		t.Errorf("directory holds %s; want a and b, no c, no temporary file", got)
	}
}

// BenchmarkWriteFiles writes 1,000 unit-sized files into a fresh directory
// of the test's temporary directory (set TMPDIR to try another file system):
// together, and one WriteFile after another.
func BenchmarkWriteFiles(b *testing.B) {
	data := []byte(strings.Repeat("ExecStart=/bin/true\n", 15))
	files := func(dir string) []fsutil.File {
		fs := make([]fsutil.File, 1000)
		for i := range fs {
			fs[i] = fsutil.File{Path: filepath.Join(dir, fmt.Sprintf("u%04d.service", i)), Data: data, Perm: 0o644}
		}
		return fs
	}
	b.Run("together", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			fs := files(b.TempDir())
			b.StartTimer()
			if _, err := fsutil.WriteFiles(fs); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("one-by-one", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			fs := files(b.TempDir())
			b.StartTimer()
			for _, f := range fs {
				if err := fsutil.WriteFile(f.Path, f.Data, f.Perm); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
