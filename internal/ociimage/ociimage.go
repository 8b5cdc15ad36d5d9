// Package ociimage builds hostprov's container image: an OCI image index for
// linux/amd64 and linux/arm64, each image the static hostprov binary on a
// base layer made here from nothing (a passwd and group naming the non-root
// user, a /tmp), written as an OCI image layout without a container daemon.
//
// Every byte of the image follows from its Spec and the binaries: all
// timestamps are Spec.Created (the commit time), tar headers carry no host
// user or group names, and layers are compressed by Go's own gzip, so the
// same commit built with the same Go gives the same index digest.
package ociimage

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The user the image runs as: distroless's "nonroot", so that a cluster's
// runAsNonRoot check (which needs a number, not a name) passes and files
// the container writes on a shared volume have a recognizable owner.
const (
	UID      = 65532
	GID      = 65532
	UserName = "nonroot"
)

// Entrypoint is where the binary lies in the image and what it runs.
const Entrypoint = "/usr/bin/hostprov"

// VersionVar is the variable the version is stamped into with -X.
const VersionVar = "github.com/hostprov/hostprov/internal/cli.Version"

// RefName is the OCI annotation that names an image in a layout's
// index.json: the tag in `oci:DIR:TAG`.
const RefName = "org.opencontainers.image.ref.name"

// Platforms are the platforms the index holds, in its order. arm64 names
// its variant as Go builds it (GOARM64=v8.0), as the official images do.
var Platforms = []v1.Platform{
	{OS: "linux", Architecture: "amd64"},
	{OS: "linux", Architecture: "arm64", Variant: "v8"},
}

// Spec is what the image says about itself.
type Spec struct {
	Version  string    // stamped into the binary; the version label and the layout's tag
	Revision string    // the commit built; may be empty outside a git clone
	Created  time.Time // the commit time or SOURCE_DATE_EPOCH, never the clock: every timestamp in the image
	Source   string    // the repository's URL
}

// Labels are the OCI annotations (org.opencontainers.image.*) for s, used
// both as the config's labels (what `docker inspect` shows) and as the
// manifests' annotations (what registries show). There is no licenses key:
// the repository states no license.
func (s Spec) Labels() map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "hostprov",
		"org.opencontainers.image.description": "Boot-time host provisioner: renders a YAML hook spec to systemd units and applies them on a node",
		"org.opencontainers.image.version":     s.Version,
		"org.opencontainers.image.created":     s.Created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.source":      s.Source,
	}
	if s.Revision != "" {
		l["org.opencontainers.image.revision"] = s.Revision
	}
	return l
}

// BuildBinary builds the module's cmd/hostprov at moduleDir for p into out:
// static (CGO_ENABLED=0, so the image needs no C library), stripped, with
// paths of the build machine trimmed so that two machines build the same
// bytes, and with version stamped. The revision is recorded as make build
// records it (-buildvcs=auto), so that in a git clone `hostprov version`
// in the image names the commit. Its error carries the go tool's output.
func BuildBinary(ctx context.Context, moduleDir string, p v1.Platform, version, out string) error {
	// -tags kube: the image runs the agent and the controller, which a
	// node's build leaves out (see internal/cli/kube_off.go).
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=auto", "-tags", "kube",
		"-ldflags", "-s -w -X "+VersionVar+"="+version, "-o", out, "./cmd/hostprov")
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
	if p.Architecture == "arm64" && p.Variant == "v8" {
		cmd.Env = append(cmd.Env, "GOARM64=v8.0")
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build for %s: %v\n%s", p, err, b)
	}
	return nil
}

// Index assembles the image index from one binary per platform, keyed by
// the platform's String() ("linux/amd64", "linux/arm64/v8"). It reads the
// binaries; it writes nothing.
func Index(s Spec, binaries map[string]string) (v1.ImageIndex, error) {
	if s.Version == "" || s.Created.IsZero() {
		return nil, errors.New("ociimage: the spec needs a version and a creation time")
	}
	base, err := layer(baseFiles(), s.Created)
	if err != nil {
		return nil, fmt.Errorf("base layer: %w", err)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var adds []mutate.IndexAddendum
	for _, p := range Platforms {
		path, ok := binaries[p.String()]
		if !ok {
			return nil, fmt.Errorf("ociimage: no binary for %s", p)
		}
		img, err := image(s, p, base, path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		adds = append(adds, mutate.IndexAddendum{
			Add:        notArtifact{img},
			Descriptor: v1.Descriptor{Platform: &p},
		})
	}
	idx = mutate.AppendManifests(idx, adds...)
	return mutate.Annotations(idx, s.Labels()).(v1.ImageIndex), nil
}

// notArtifact is an image whose descriptor in the index has no
// artifactType. The OCI image spec gives that field to artifacts (a
// manifest whose config is not an image's); go-containerregistry fills it
// with the config's media type for every manifest, which would describe
// each platform's image as an artifact of type "image config".
type notArtifact struct{ v1.Image }

// ArtifactType is what partial.Descriptor asks for before it guesses.
func (notArtifact) ArtifactType() (string, error) { return "", nil }

// image is one platform's image: the shared base layer and the binary.
func image(s Spec, p v1.Platform, base v1.Layer, binary string) (v1.Image, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	bin, err := layer([]file{
		{name: "usr/", mode: 0o755 | os.ModeDir},
		{name: "usr/bin/", mode: 0o755 | os.ModeDir},
		{name: Entrypoint[1:], mode: 0o755, data: data},
	}, s.Created)
	if err != nil {
		return nil, fmt.Errorf("binary layer: %w", err)
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	created := v1.Time{Time: s.Created.UTC()}
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: created, CreatedBy: "hostprov base: /etc/passwd and /etc/group with " + UserName + ", /tmp"}},
		mutate.Addendum{Layer: bin, History: v1.History{Created: created, CreatedBy: "hostprov " + s.Version + " static binary at " + Entrypoint}},
	)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = created
	cf.Config = v1.Config{
		User:       strconv.Itoa(UID) + ":" + strconv.Itoa(GID),
		Entrypoint: []string{Entrypoint},
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		WorkingDir: "/",
		Labels:     s.Labels(),
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, s.Labels()).(v1.Image), nil
}

// file is one entry of a layer: a directory when mode says so (its name
// ends in a slash, as tar writes directories), else a regular file.
type file struct {
	name     string
	mode     os.FileMode
	uid, gid int
	data     []byte
}

// baseFiles is what a distroless static base has that hostprov can use:
// the user table a runtime reads to resolve the image's user (and that
// tools such as `id` inside a debug container show), its home, and a
// world-writable sticky /tmp for anything that needs a scratch file. No CA
// certificates: hostprov makes no TLS connections.
func baseFiles() []file {
	return []file{
		{name: "etc/", mode: 0o755 | os.ModeDir},
		{name: "etc/passwd", mode: 0o644, data: []byte(
			"root:x:0:0:root:/root:/sbin/nologin\n" +
				fmt.Sprintf("%s:x:%d:%d:%s:/home/%s:/sbin/nologin\n", UserName, UID, GID, UserName, UserName))},
		{name: "etc/group", mode: 0o644, data: []byte(
			"root:x:0:\n" + fmt.Sprintf("%s:x:%d:\n", UserName, GID))},
		{name: "home/", mode: 0o755 | os.ModeDir},
		{name: "home/" + UserName + "/", mode: 0o700 | os.ModeDir, uid: UID, gid: GID},
		{name: "root/", mode: 0o700 | os.ModeDir},
		{name: "tmp/", mode: 0o777 | os.ModeDir | os.ModeSticky},
	}
}

// layer makes a gzip-compressed OCI layer of files, every entry stamped
// with mtime and no user or group names, so its digest depends on the
// files alone.
func layer(files []file, mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name:    f.name,
			Mode:    int64(f.mode.Perm()),
			Uid:     f.uid,
			Gid:     f.gid,
			ModTime: mtime.UTC().Truncate(time.Second),
			Format:  tar.FormatPAX,
		}
		if f.mode&os.ModeSticky != 0 {
			h.Mode |= 0o1000 // c_ISVTX: tar's own bit, not os.ModeSticky's
		}
		if f.mode.IsDir() {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}

// WriteLayout writes idx as an OCI image layout at dir, its index.json
// naming it ref (the tag of `skopeo copy oci:DIR:REF ...`). What was at
// dir is replaced, and only once the new layout is complete, so a failed
// build leaves the previous image.
func WriteLayout(dir string, idx v1.ImageIndex, ref string) error {
	tmp := dir + ".new"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{RefName: ref})); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

// WriteArchive writes the layout at dir as an OCI archive (a tar of the
// layout, what `podman load` and `skopeo copy oci-archive:` read) to out,
// entries in name order and stamped with mtime, so it is as reproducible
// as the layout. It replaces out only once the archive is complete.
func WriteArchive(dir, out string, mtime time.Time) error {
	f, err := os.CreateTemp(filepath.Dir(out), filepath.Base(out)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after the rename, a no-op
	tw := tar.NewWriter(f)
	// WalkDir visits in lexical order: the archive's order is fixed.
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: mtime.UTC().Truncate(time.Second), Format: tar.FormatPAX}
		if d.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
			return tw.WriteHeader(h)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, int64(len(data))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		// CreateTemp made it 0600; the archive is for anyone to load.
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(f.Name(), out)
}
