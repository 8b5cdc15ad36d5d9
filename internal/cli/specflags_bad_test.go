package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/internal/benchspec"
	"github.com/hostprov/hostprov/internal/golden"
)

// diagLine is the form of a diagnostic's first line: file:line:col, the
// severity, then the path into the spec and the message.
var diagLine = regexp.MustCompile(`^([^:]+):(\d+):(\d+): (error|warning): `)

// TestBadInput runs every spec of the bad-input catalogue in
// testdata/bad through validate --strict and render, and checks that each
// exits 2, writes nothing, and reports exactly the diagnostics recorded in
// its .want file (regenerated with -update and reviewed in the diff).
func TestBadInput(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "testdata", "bad"))
	if err != nil {
		t.Fatal(err)
	}
	specs, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) < 60 {
		t.Fatalf("the catalogue has %d cases; it must keep at least 60", len(specs))
	}
	t.Chdir(dir)
	for _, spec := range specs {
		name := filepath.Base(spec)
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run([]string{"validate", "--strict", "-f", name}, strings.NewReader(""), &stdout, &stderr)
			if code != ExitInvalid {
				t.Errorf("validate --strict exits %d, want %d", code, ExitInvalid)
			}
			if stdout.Len() > 0 {
				t.Errorf("validate printed to stdout for an invalid spec:\n%s", stdout.String())
			}
			diags := 0
			for _, l := range strings.Split(stderr.String(), "\n") {
				if m := diagLine.FindStringSubmatch(l); m != nil {
					diags++
					if m[1] != name || m[2] == "0" || m[3] == "0" {
						t.Errorf("diagnostic without a valid position: %s", l)
					}
				} else if strings.HasPrefix(l, name+": error:") {
					diags++ // a problem of the whole file, such as an empty one
				}
			}
			if diags == 0 {
				t.Errorf("no diagnostic in:\n%s", stderr.String())
			}
			golden.Check(t, strings.TrimSuffix(name, ".yaml")+".want", []byte(fmt.Sprintf("exit %d\n%s", code, stderr.String())))

			// Render must refuse it as well and write nothing at all.
			out := filepath.Join(t.TempDir(), "units")
			stdout.Reset()
			stderr.Reset()
			if code := Run([]string{"render", "--strict", "-f", name, "--format", "dir", "--out", out}, strings.NewReader(""), &stdout, &stderr); code != ExitInvalid {
				t.Errorf("render exits %d, want %d", code, ExitInvalid)
			}
			if _, err := os.Lstat(out); !os.IsNotExist(err) {
				t.Errorf("render wrote %s for an invalid spec", out)
			}
			if code := Run([]string{"render", "--strict", "-f", name}, strings.NewReader(""), &stdout, &stderr); code != ExitInvalid || stdout.Len() > 0 {
				t.Errorf("render to Ignition exits %d and prints %d bytes, want exit %d and nothing", code, stdout.Len(), ExitInvalid)
			}
		})
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

// BenchmarkHugeSpec measures refusing a 50 MB spec: time and memory must
// stay bounded (the read stops one byte past the limit).
func BenchmarkHugeSpec(b *testing.B) {
	spec := hugeSpec(b)
	b.ReportAllocs()
	for b.Loop() {
		var stdout, stderr bytes.Buffer
		if code := Run([]string{"validate", "-f", spec}, strings.NewReader(""), &stdout, &stderr); code != ExitInvalid {
			b.Fatalf("exit %d", code)
		}
	}
}

// BenchmarkRender measures a whole render of a spec of many hooks to
// Ignition and a validate of it, as the command runs them, from the file
// to the written config: what benchbutane compares with Butane.
func BenchmarkRender(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		spec := filepath.Join(b.TempDir(), "hooks.yaml")
		if err := os.WriteFile(spec, benchspec.Spec(n), 0o644); err != nil {
			b.Fatal(err)
		}
		for _, args := range [][]string{{"render", "-f", spec, "--format", "ignition"}, {"validate", "-f", spec}} {
			b.Run(fmt.Sprintf("%s/hooks=%d", args[0], n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					var stdout, stderr bytes.Buffer
					if code := Run(args, strings.NewReader(""), &stdout, &stderr); code != ExitOK {
						b.Fatalf("exit %d: %s", code, stderr.String())
					}
				}
			})
		}
	}
}
