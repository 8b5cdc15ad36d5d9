package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// TestHugeSpec checks that a 50 MB spec is refused with a positioned
// error, without writing anything.
func TestHugeSpec(t *testing.T) {
	spec := hugeSpec(t)
	out := filepath.Join(t.TempDir(), "units")
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
	var stdout, stderr bytes.Buffer
	code := Run([]string{"render", "-f", p, "--format", "kops"}, strings.NewReader(""), &stdout, &stderr)
	if code != ExitInvalid || !strings.Contains(stderr.String(), p+":1:1: error: the spec is") {
		t.Errorf("exit %d, want %d and the size error:\n%s%s", code, ExitInvalid, stdout.String(), stderr.String())
	}
}
