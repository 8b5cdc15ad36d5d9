package units

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hostprov/hostprov/internal/corpus"
)

// corpusDir is the shared real-world corpus beside the repository root.
var corpusDir = corpus.Path("units")

// stripProvenance removes the corpus provenance header, which every
// corpus file has.
func stripProvenance(t *testing.T, data []byte) []byte {
	t.Helper()
	body, ok := corpus.Strip(data)
	if !ok {
		t.Fatal("no corpus-header-end line")
	}
	return body
}

func TestCorpus(t *testing.T) {
	if _, err := os.Stat(corpusDir); err != nil {
		t.Skipf("the shared corpus (%s) is not present: %v", corpusDir, err)
	}
	n := 0
	err := filepath.WalkDir(corpusDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		rel, _ := filepath.Rel(corpusDir, path)
		t.Run(rel, func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			data := stripProvenance(t, raw)
			f, err := Parse(data)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			out := f.Canonical()
			g, err := Parse(out)
			if err != nil {
				t.Fatalf("Parse(canonical): %v\n%s", err, out)
			}
			if diff := cmp.Diff(meaning(f), meaning(g)); diff != "" {
				t.Errorf("Format changed per-key values (-before +after):\n%s", diff)
			}
			if again := g.Canonical(); !bytes.Equal(out, again) {
				t.Errorf("Format is not idempotent:\n%s\n---\n%s", out, again)
			}
			if len(comments(f)) != len(comments(g)) {
				t.Errorf("comments: %d before, %d after", len(comments(f)), len(comments(g)))
			}
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("no files under %s", corpusDir)
	}
}

// TestCorpusContinuation pins the 23-continuation kube-apiserver ExecStart:
// joined into one line, it must split into the same 24 words systemd sees.
func TestCorpusContinuation(t *testing.T) {
	path := filepath.Join(corpusDir, "k8s-the-hard-way", "kube-apiserver.service")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("corpus file not present: %v", err)
	}
	f, err := Parse(stripProvenance(t, raw))
	if err != nil {
		t.Fatal(err)
	}
	vs := f.Values(SectionService, "ExecStart")
	if len(vs) != 1 {
		t.Fatalf("ExecStart values: %q", vs)
	}
	argv, err := SplitExec(vs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(argv) != 24 {
		t.Errorf("got %d words, want 24: %q", len(argv), argv)
	}
	g, err := Parse(f.Canonical())
	if err != nil {
		t.Fatal(err)
	}
	argv2, err := SplitExec(g.Values(SectionService, "ExecStart")[0])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(argv, argv2); diff != "" {
		t.Errorf("canonical form splits differently:\n%s", diff)
	}
}
