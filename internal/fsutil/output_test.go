package fsutil_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostprov/hostprov/internal/fsutil"
)

// readLink returns the target of the link at path, failing the test when
// path is not a link any more.
func readLink(t *testing.T, path string) string {
	t.Helper()
	target, err := os.Readlink(path)
	if err != nil {
		t.Fatalf("%s is not a symbolic link any more: %v", path, err)
	}
	return target
}

// TestWriteOutputThroughLinks: an output named through a link, or a chain
// of links across directories, is written where they lead, atomically,
// with the target's mode; the links stay.
func TestWriteOutputThroughLinks(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"specs", "links", "work"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(root, "specs", "cluster.yaml")
	if err := os.WriteFile(target, []byte("old\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	// work/out -> ../links/hop (relative) -> /abs/specs/cluster.yaml.
	if err := os.Symlink(target, filepath.Join(root, "links", "hop")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../links/hop", filepath.Join(root, "work", "out")); err != nil {
		t.Fatal(err)
	}
	// and work/direct -> ../specs/cluster.yaml, one link.
	if err := os.Symlink("../specs/cluster.yaml", filepath.Join(root, "work", "direct")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"direct", "out"} {
		want := "new through " + name + "\n"
		if err := fsutil.WriteOutput(filepath.Join(root, "work", name), []byte(want), 0o644); err != nil {
			t.Fatalf("WriteOutput(%s): %v", name, err)
		}
		if got, err := os.ReadFile(target); err != nil || string(got) != want {
			t.Errorf("after writing %s, the target has %q, %v; want %q", name, got, err, want)
		}
	}
	if got := readLink(t, filepath.Join(root, "work", "out")); got != "../links/hop" {
		t.Errorf("work/out points to %q now", got)
	}
	if got := readLink(t, filepath.Join(root, "links", "hop")); got != target {
		t.Errorf("links/hop points to %q now", got)
	}
	readLink(t, filepath.Join(root, "work", "direct"))
	if fi, err := os.Stat(target); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("the target is %v, %v; want it to keep its mode 0640", fi, err)
	}
	// Written atomically: no temporary file is left beside the target,
	// and none was made beside the links.
	for _, d := range []string{"specs", "links", "work"} {
		for _, n := range listDir(t, filepath.Join(root, d)) {
			if strings.Contains(n, fsutil.TempInfix) {
				t.Errorf("temporary file %s left in %s", n, d)
			}
		}
	}
}

// TestWriteOutputDanglingLink: a link to a file that does not exist yet
// creates that file, with the mode asked for, and stays a link.
func TestWriteOutputDanglingLink(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("new.yaml", filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := fsutil.WriteOutput(filepath.Join(dir, "link.yaml"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	readLink(t, filepath.Join(dir, "link.yaml"))
	if fi, err := os.Lstat(filepath.Join(dir, "new.yaml")); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
		t.Errorf("new.yaml: %v, %v; want a regular file of mode 0644", fi, err)
	}
}

// TestWriteOutputCharDevice: a link to a character device writes to the
// device; neither is replaced.
func TestWriteOutputCharDevice(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "null")
	if err := os.Symlink("/dev/null", link); err != nil {
		t.Fatal(err)
	}
	if err := fsutil.WriteOutput(link, []byte("into the void\n"), 0o644); err != nil {
		t.Fatalf("WriteOutput to a link to /dev/null: %v", err)
	}
	if got := readLink(t, link); got != "/dev/null" {
		t.Errorf("the link points to %q now", got)
	}
	if fi, err := os.Stat("/dev/null"); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is %v, %v now", fi, err)
	}
	if n := listDir(t, dir); len(n) != 1 {
		t.Errorf("the directory has %v; want the link alone", n)
	}
}

// TestWriteOutputFIFO: a named pipe, and a link to one, are written into,
// not replaced: the reader gets the bytes.
func TestWriteOutputFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink("pipe", link); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{fifo, link} {
		got := make(chan string, 1)
		go func() {
			f, err := os.Open(fifo)
			if err != nil {
				got <- err.Error()
				return
			}
			defer f.Close()
			b, _ := io.ReadAll(f)
			got <- string(b)
		}()
		if err := fsutil.WriteOutput(name, []byte("through the pipe\n"), 0o644); err != nil {
			t.Fatalf("WriteOutput(%s): %v", name, err)
		}
		if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
			t.Fatalf("the FIFO is %v, %v now", fi, err)
		}
		select {
		case s := <-got:
			if s != "through the pipe\n" {
				t.Errorf("the reader of %s got %q", name, s)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the reader of %s got nothing in 10s", name)
		}
	}
	readLink(t, link)
}

// TestWriteOutputOpenFile: /dev/fd/N and /proc/self/fd/N name a file the
// process holds open (as /dev/stdout does), not a place: the pipe or file
// behind the descriptor gets the bytes, the same file (its inode) is kept.
func TestWriteOutputOpenFile(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := fsutil.WriteOutput(fmt.Sprintf("/dev/fd/%d", w.Fd()), []byte("to the pipe\n"), 0o644); err != nil {
		t.Fatalf("WriteOutput to /dev/fd/N of a pipe: %v", err)
	}
	w.Close()
	if b, _ := io.ReadAll(r); string(b) != "to the pipe\n" {
		t.Errorf("the pipe got %q", b)
	}

	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("old contents, longer than the new\n"); err != nil {
		t.Fatal(err)
	}
	before, _ := f.Stat()
	if err := fsutil.WriteOutput(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), []byte("new\n"), 0o644); err != nil {
		t.Fatalf("WriteOutput to /proc/self/fd/N of a file: %v", err)
	}
	after, err := os.Stat(f.Name())
	if err != nil || !os.SameFile(before, after) {
		t.Errorf("the file was replaced (%v), not written into", err)
	}
	if b, _ := os.ReadFile(f.Name()); string(b) != "new\n" {
		t.Errorf("the file has %q", b)
	}
}

// TestWriteOutputRefuses: a directory is no output, and nothing is made
// in it.
func TestWriteOutputRefuses(t *testing.T) {
	dir := t.TempDir()
	err := fsutil.WriteOutput(dir, []byte("x"), 0o644)
	if err == nil || !strings.Contains(err.Error(), "a directory") {
		t.Errorf("WriteOutput to a directory: %v; want an error saying it is a directory", err)
	}
	if n := listDir(t, dir); len(n) != 0 {
		t.Errorf("the directory has %v", n)
	}
}
