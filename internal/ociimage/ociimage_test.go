package ociimage

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/hostprov/hostprov/internal/hosttools"
	"github.com/hostprov/hostprov/internal/testbin"
)

// The swap example and what hostprov renders of it (a golden of the
// examples' tests): the image's binary must render it byte for byte.
const (
	swapSpec  = "../../examples/swap/hostprov.yaml"
	swapUnits = "../../testdata/golden/examples/swap.units"
)

// TestImage builds the image as make image does, reads it back from its
// OCI layout, and runs the binary from the extracted root: on the host,
// and chrooted into the root as the image's user, as a runtime would.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds hostprov for two platforms; skipped with -short")
	}
	if _, err := exec.LookPath("go"); err != nil {
		hosttools.Unavailable(t, "the go tool is not on PATH: the image test builds hostprov for %d platforms", len(Platforms))
	}
	ctx, cancel := context.WithTimeout(context.Background(), testbin.BuildLimit)
	defer cancel()
	spec := Spec{
		Version:  "v0.0.0-imagetest",
		Revision: "0123456789abcdef0123456789abcdef01234567",
		Created:  time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC),
		Source:   "https://github.com/hostprov/hostprov",
	}
	bins := map[string]string{}
	for _, p := range Platforms {
		bin := filepath.Join(t.TempDir(), "hostprov")
		if err := BuildBinary(ctx, "../..", p, spec.Version, bin); err != nil {
			t.Fatal(err)
		}
		bins[p.String()] = bin
	}
	idx, err := Index(spec, bins)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("reproducible", func(t *testing.T) { checkReproducible(t, spec, bins, idx) })

	dir := filepath.Join(t.TempDir(), "oci")
	if err := WriteLayout(dir, idx, spec.Version); err != nil {
		t.Fatal(err)
	}
	inner := readLayout(t, dir, spec.Version)
	images := checkIndex(t, inner, spec)

	t.Run("archive", func(t *testing.T) {
		// The archive holds exactly the layout's files, byte for byte.
		archive := filepath.Join(t.TempDir(), "hostprov.oci.tar")
		if err := WriteArchive(dir, archive, spec.Created); err != nil {
			t.Fatal(err)
		}
		checkArchive(t, archive, dir, spec.Created)
	})

	for _, p := range Platforms {
		t.Run("binary "+p.String(), func(t *testing.T) {
			root := extract(t, images[p.String()])
			checkELF(t, filepath.Join(root, Entrypoint), p)
		})
	}

	host := Platforms[0]
	for _, p := range Platforms {
		if p.Architecture == runtime.GOARCH {
			host = p
		}
	}
	if host.Architecture != runtime.GOARCH || runtime.GOOS != "linux" {
		hosttools.Unavailable(t, "this machine (%s/%s) runs none of the image's platforms", runtime.GOOS, runtime.GOARCH)
	}
	root := extract(t, images[host.String()])
	checkRoot(t, root)
	cf, err := images[host.String()].ConfigFile()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("run on the host", func(t *testing.T) { checkRunOnHost(ctx, t, root, spec) })

	t.Run("run as the image", func(t *testing.T) { checkRunAsImage(ctx, t, root, cf, spec) })
}

// checkReproducible checks that the same inputs give the same digest as
// idx, and that the creation time is part of it: it is the spec's, not the
// clock's.
func checkReproducible(t *testing.T, spec Spec, bins map[string]string, idx v1.ImageIndex) {
	want := digest(t, idx)
	again, err := Index(spec, bins)
	if err != nil {
		t.Fatal(err)
	}
	if got := digest(t, again); got != want {
		t.Errorf("a second build of the same spec and binaries has digest %s, the first %s", got, want)
	}
	later := spec
	later.Created = spec.Created.Add(time.Second)
	other, err := Index(later, bins)
	if err != nil {
		t.Fatal(err)
	}
	if got := digest(t, other); got == want {
		t.Errorf("a build created a second later has the same digest %s: the creation time is not in the image", got)
	}
}

// checkRunOnHost runs the image's binary, in the extracted root, on the
// host: it says its version and renders a spec.
func checkRunOnHost(ctx context.Context, t *testing.T, root string, spec Spec) {
	bin := filepath.Join(root, Entrypoint)
	out := run(t, exec.CommandContext(ctx, bin, "version"), "")
	if want := "hostprov " + spec.Version + " ("; !strings.HasPrefix(out, want) {
		t.Errorf("hostprov version = %q, want it to start with %q (the stamped version)", out, want)
	}
	out = run(t, exec.CommandContext(ctx, bin, "render", "-f", swapSpec, "--format", "units"), "")
	checkSwapUnits(t, out)
}

// checkRunAsImage runs the image's entrypoint as a container runtime
// would, chrooted into root as the image's user with its environment, and
// checks what that user can and cannot write.
func checkRunAsImage(ctx context.Context, t *testing.T, root string, cf *v1.ConfigFile, spec Spec) {
	if os.Geteuid() != 0 {
		hosttools.Unavailable(t, "running the binary chrooted as the image's user needs root")
	}
	uid, gid := imageUser(t, cf.Config.User)
	if len(cf.Config.Entrypoint) == 0 {
		t.Fatal("the image has no entrypoint to run")
	}
	// The kernel chroots before it drops to the image's user, so
	// only the root's own modes decide what the user can reach.
	asImage := func(stdin string, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, cf.Config.Entrypoint[0], args...)
		cmd.Env = cf.Config.Env
		cmd.Dir = cf.Config.WorkingDir
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Chroot:     root,
			Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}},
		}
		return cmd
	}
	out := run(t, asImage("", "version"), "")
	if want := "hostprov " + spec.Version + " ("; !strings.HasPrefix(out, want) {
		t.Errorf("hostprov version = %q, want it to start with %q", out, want)
	}
	data, err := os.ReadFile(swapSpec)
	if err != nil {
		t.Fatal(err)
	}
	checkSwapUnits(t, run(t, asImage(string(data), "render", "-f", "-", "--format", "units"), string(data)))

	// The user writes in /tmp, and what it writes is its own ...
	run(t, asImage(string(data), "render", "-f", "-", "--format", "dir", "--out", "/tmp/units"), string(data))
	fi, err := os.Stat(filepath.Join(root, "tmp", "units", "swap1.swap"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != uid || st.Gid != gid {
		t.Errorf("/tmp/units/swap1.swap is owned by %d:%d, want the image's user %d:%d", st.Uid, st.Gid, uid, gid)
	}
	// ... but it is not root: /etc is not its to write.
	cmd := asImage(string(data), "render", "-f", "-", "--format", "dir", "--out", "/etc/units")
	cmd.Stdin = strings.NewReader(string(data))
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "permission denied") {
		t.Errorf("render --out /etc/units as the image's user: %v, %q; want it refused with permission denied", err, out)
	}
}

func digest(t *testing.T, idx v1.ImageIndex) v1.Hash {
	t.Helper()
	h, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// readLayout reads the layout at dir back and returns the image index its
// index.json names ref.
func readLayout(t *testing.T, dir, ref string) v1.ImageIndex {
	t.Helper()
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("index.json lists %d manifests, want 1 (the image index)", len(im.Manifests))
	}
	d := im.Manifests[0]
	if d.MediaType != types.OCIImageIndex || d.Annotations[RefName] != ref {
		t.Fatalf("index.json lists %s named %q, want %s named %q", d.MediaType, d.Annotations[RefName], types.OCIImageIndex, ref)
	}
	inner, err := top.ImageIndex(d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	return inner
}

// checkIndex checks the image index read back, and returns its images by
// platform.
func checkIndex(t *testing.T, idx v1.ImageIndex, spec Spec) map[string]v1.Image {
	t.Helper()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.title":       "hostprov",
		"org.opencontainers.image.description": "Boot-time host provisioner: renders a YAML hook spec to systemd units and applies them on a node",
		"org.opencontainers.image.version":     "v0.0.0-imagetest",
		"org.opencontainers.image.revision":    "0123456789abcdef0123456789abcdef01234567",
		"org.opencontainers.image.created":     "2026-03-04T05:06:07Z",
		"org.opencontainers.image.source":      "https://github.com/hostprov/hostprov",
	}
	if im.MediaType != types.OCIImageIndex {
		t.Errorf("index media type %s, want %s", im.MediaType, types.OCIImageIndex)
	}
	if diff := cmp.Diff(wantLabels, im.Annotations); diff != "" {
		t.Errorf("index annotations (-want +got):\n%s", diff)
	}
	var platforms []string
	images := map[string]v1.Image{}
	for _, d := range im.Manifests {
		if d.Platform == nil {
			t.Fatalf("manifest %s has no platform", d.Digest)
		}
		p := d.Platform.String()
		platforms = append(platforms, p)
		if d.MediaType != types.OCIManifestSchema1 || d.ArtifactType != "" {
			t.Errorf("%s: descriptor %s with artifactType %q, want %s and none", p, d.MediaType, d.ArtifactType, types.OCIManifestSchema1)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		images[p] = img
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantLabels, m.Annotations); diff != "" {
			t.Errorf("%s: manifest annotations (-want +got):\n%s", p, diff)
		}
		if m.Config.MediaType != types.OCIConfigJSON {
			t.Errorf("%s: config media type %s, want %s", p, m.Config.MediaType, types.OCIConfigJSON)
		}
		for _, l := range m.Layers {
			if l.MediaType != types.OCILayer {
				t.Errorf("%s: layer %s has media type %s, want %s", p, l.Digest, l.MediaType, types.OCILayer)
			}
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if got := (v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}).String(); got != p {
			t.Errorf("%s: the config says its platform is %s", p, got)
		}
		if !cf.Created.Equal(spec.Created) {
			t.Errorf("%s: created %s, want the spec's %s", p, cf.Created, spec.Created)
		}
		for _, h := range cf.History {
			if !h.Created.Equal(spec.Created) {
				t.Errorf("%s: history %q created %s, want the spec's %s", p, h.CreatedBy, h.Created, spec.Created)
			}
		}
		uid, _ := imageUser(t, cf.Config.User)
		if uid == 0 {
			t.Errorf("%s: the image runs as root (User %q)", p, cf.Config.User)
		}
		if diff := cmp.Diff([]string{"/usr/bin/hostprov"}, cf.Config.Entrypoint); diff != "" {
			t.Errorf("%s: entrypoint (-want +got):\n%s", p, diff)
		}
		if diff := cmp.Diff(wantLabels, cf.Config.Labels); diff != "" {
			t.Errorf("%s: labels (-want +got):\n%s", p, diff)
		}
	}
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64/v8"}, platforms); diff != "" {
		t.Errorf("platforms (-want +got):\n%s", diff)
	}
	return images
}

// imageUser parses the config's User, which must be numeric (UID:GID):
// a name cannot be checked by a runtime's runAsNonRoot.
func imageUser(t *testing.T, user string) (uid, gid uint32) {
	t.Helper()
	u, g, ok := strings.Cut(user, ":")
	un, err1 := strconv.ParseUint(u, 10, 32)
	gn, err2 := strconv.ParseUint(g, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		t.Fatalf("User %q, want numeric UID:GID", user)
	}
	return uint32(un), uint32(gn)
}

// extract unpacks img's filesystem (its layers flattened, as a runtime
// sees them) into a new directory, with each entry's mode and, as root,
// its owner. The image holds only directories and regular files.
func extract(t *testing.T, img v1.Image) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(root, filepath.FromSlash(h.Name))
		mode := h.FileInfo().Mode()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("%s: tar entry type %q, want only directories and regular files", h.Name, h.Typeflag)
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(path, h.Uid, h.Gid); err != nil {
				t.Fatal(err)
			}
		}
		// After the chown, which clears set-id bits; Chmod sets the sticky bit.
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// checkRoot checks the base layer's files in an extracted root.
func checkRoot(t *testing.T, root string) {
	t.Helper()
	for path, want := range map[string]os.FileMode{
		"tmp":                               os.ModeDir | os.ModeSticky | 0o777,
		"etc/passwd":                        0o644,
		"etc/group":                         0o644,
		"home/" + UserName:                  os.ModeDir | 0o700,
		strings.TrimPrefix(Entrypoint, "/"): 0o755,
	} {
		fi, err := os.Lstat(filepath.Join(root, path))
		if err != nil {
			t.Error(err)
			continue
		}
		if fi.Mode() != want {
			t.Errorf("/%s has mode %s, want %s", path, fi.Mode(), want)
		}
	}
	for file, want := range map[string]string{
		"etc/passwd": fmt.Sprintf("%s:x:%d:%d:", UserName, UID, GID),
		"etc/group":  fmt.Sprintf("%s:x:%d:", UserName, GID),
	} {
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(data, []byte("\n"+want)) {
			t.Errorf("/%s does not name the image's user (%q):\n%s", file, want, data)
		}
	}
}

// checkELF checks that the binary is for p and static: no program
// interpreter, so it runs on an image without a C library.
func checkELF(t *testing.T, path string, p v1.Platform) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.Architecture]
	if f.Machine != want {
		t.Errorf("%s is for %s, want %s", Entrypoint, f.Machine, want)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Errorf("%s has a program interpreter: it is not static", Entrypoint)
		}
	}
}

// checkArchive checks that the OCI archive holds the layout's files in
// name order, each with its bytes and the given mtime.
func checkArchive(t *testing.T, archive, dir string, mtime time.Time) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if !h.ModTime.Equal(mtime) {
			t.Errorf("%s: mtime %s, want %s", h.Name, h.ModTime, mtime)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		got, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(h.Name)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the layout's", h.Name)
		}
	}
	var want []string
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			rel += "/"
		}
		want = append(want, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("archive entries (-want +got):\n%s", diff)
	}
}

// run runs cmd with stdin and returns its standard output; it fails the
// test if the command fails.
func run(t *testing.T, cmd *exec.Cmd, stdin string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, stderr.Bytes())
	}
	return stdout.String()
}

func checkSwapUnits(t *testing.T, got string) {
	t.Helper()
	want, err := os.ReadFile(swapUnits)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("render --format units of the swap example differs from %s (-want +got):\n%s", swapUnits, diff)
	}
}
