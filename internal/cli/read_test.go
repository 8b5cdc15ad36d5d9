package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/hostprov/hostprov/pkg/hooks"
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
		got, err := readAtMost(f)
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
