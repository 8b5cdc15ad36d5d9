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

// openDir opens a directory for the test.
func openDir(t testing.TB, path string) *fsutil.Dir {
	t.Helper()
	d, err := fsutil.OpenDir(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
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
	d, s := openDir(t, dir), openDir(t, sub)
	files := []fsutil.File{
		{Dir: d, Name: "a", Data: []byte("new a"), Perm: 0o644},
		{Dir: d, Name: "b", Data: []byte("b"), Perm: 0o640},
		{Dir: s, Name: "c", Data: []byte("c"), Perm: 0o644},
		{Dir: d, Name: "link", Data: []byte("link"), Perm: 0o644},
	}
	n, err := fsutil.WriteFiles(files)
	if err != nil || n != len(files) {
		t.Fatalf("WriteFiles: %d, %v; want %d, nil", n, err, len(files))
	}
	for _, f := range files {
		fi, err := os.Lstat(f.Path())
		if err != nil {
			t.Fatal(err)
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm() != f.Perm {
			t.Errorf("%s: mode %v, want a regular file with %v", f.Path(), fi.Mode(), f.Perm)
		}
		if got, _ := os.ReadFile(f.Path()); string(got) != string(f.Data) {
			t.Errorf("%s: %q, want %q", f.Path(), got, f.Data)
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
// directory was removed since it was opened) fails the batch before any
// file is renamed.
func TestWriteFilesFailsBeforeRenaming(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("old a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "gone"), 0o755); err != nil {
		t.Fatal(err)
	}
	d, gone := openDir(t, dir), openDir(t, filepath.Join(dir, "gone"))
	if err := os.Remove(filepath.Join(dir, "gone")); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "gone", "c")
	n, err := fsutil.WriteFiles([]fsutil.File{
		{Dir: d, Name: "a", Data: []byte("new a"), Perm: 0o644},
		{Dir: d, Name: "b", Data: []byte("b"), Perm: 0o644},
		{Dir: gone, Name: "c", Data: []byte("c"), Perm: 0o644},
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
	d := openDir(t, dir)
	n, err := fsutil.WriteFiles([]fsutil.File{
		{Dir: d, Name: "a", Data: []byte("a"), Perm: 0o644},
		{Dir: d, Name: "b", Data: []byte("b"), Perm: 0o644},
		{Dir: d, Name: "c", Data: []byte("c"), Perm: 0o644},
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
		d := openDir(b, dir)
		fs := make([]fsutil.File, 1000)
		for i := range fs {
			fs[i] = fsutil.File{Dir: d, Name: fmt.Sprintf("u%04d.service", i), Data: data, Perm: 0o644}
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
				if err := fsutil.WriteFile(f.Path(), f.Data, f.Perm); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// TestWriteFilesFewDescriptors: a batch of far more files than the process
// may hold open is written all the same (a spec of 20,000 units, under a
// limit of 1,024 open files).
func TestWriteFilesFewDescriptors(t *testing.T) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	// Enough for the test binary's own descriptors and fsutil's batch,
	// far fewer than the files.
	low := old
	low.Cur = 400
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skipf("cannot lower the limit of open files: %v", err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)
	dir := t.TempDir()
	d := openDir(t, dir)
	files := make([]fsutil.File, 3000)
	for i := range files {
		files[i] = fsutil.File{Dir: d, Name: fmt.Sprintf("u%04d.service", i), Data: []byte("[Service]\n"), Perm: 0o644}
	}
	n, err := fsutil.WriteFiles(files)
	if err != nil || n != len(files) {
		t.Fatalf("WriteFiles: %d, %v; want %d, nil", n, err, len(files))
	}
	if got := len(listDir(t, dir)); got != len(files) {
		t.Errorf("%d names in the directory, want %d", got, len(files))
	}
}

// TestDirRefusesLinks: a Dir never opens a symbolic link below it, nor
// reads what is not a regular file.
func TestDirRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"linkdir": outside, "linkfile": filepath.Join(outside, "secret"), "zero": "/dev/zero"} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := openDir(t, dir)
	if _, err := d.OpenDir("linkdir"); !errors.Is(err, fsutil.ErrNotDir) {
		t.Errorf("OpenDir of a link: %v, want ErrNotDir", err)
	}
	if _, err := d.MkdirAll("linkdir", 0o755); !errors.Is(err, fsutil.ErrNotDir) {
		t.Errorf("MkdirAll of a link: %v, want ErrNotDir", err)
	}
	for _, name := range []string{"linkfile", "zero", "fifo", "linkdir"} {
		if data, err := d.ReadFile(name, 1<<20); !errors.Is(err, fsutil.ErrNotRegular) {
			t.Errorf("ReadFile(%s): %q, %v; want ErrNotRegular", name, data, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ReadFile("big", 99); !errors.Is(err, fsutil.ErrTooLarge) {
		t.Errorf("ReadFile over the limit: %v, want ErrTooLarge", err)
	}
	for _, bad := range []string{"", ".", "..", "a/b", "../x"} {
		if _, err := d.ReadFile(bad, 10); err == nil {
			t.Errorf("ReadFile(%q) accepted a name that is not a plain one", bad)
		}
	}
	sub, err := d.MkdirAll("new.d", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if fi, err := os.Stat(filepath.Join(dir, "new.d")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("MkdirAll made %v, %v; want a 0755 directory", fi, err)
	}
}

// TestWriteFileThroughLinkedDirectory: WriteFile follows a link in the
// directories of the path it is given (fmt -w of a file under a linked
// directory, render --out to a link), while the file itself, if a link, is
// replaced and not written through.
func TestWriteFileThroughLinkedDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := fsutil.WriteFile(filepath.Join(dir, "link", "a.service"), []byte("a"), 0o644); err != nil {
		t.Fatalf("WriteFile under a linked directory: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "real", "a.service")); err != nil || string(got) != "a" {
		t.Errorf("real/a.service: %q, %v", got, err)
	}
	// OpenDir, for what must not follow links, still refuses it.
	if _, err := fsutil.OpenDir(filepath.Join(dir, "link")); !errors.Is(err, fsutil.ErrNotDir) {
		t.Errorf("OpenDir of a link: %v, want ErrNotDir", err)
	}
}
