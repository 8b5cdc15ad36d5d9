// Command image builds hostprov's container image (make image): the static
// binary for each platform of ociimage.Platforms, assembled into an OCI
// image index and written as an OCI layout directory and an OCI archive
// under -out. It needs the go tool and no container daemon.
//
// The Makefile passes the version, the commit and the commit time, so that
// the same commit gives the same image digest.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/hostprov/hostprov/internal/ociimage"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run() error {
	version := flag.String("version", "", "the version to stamp into the binary and the labels (required)")
	revision := flag.String("revision", "", "the commit built, for the revision label")
	created := flag.String("created", "", "the image's creation time in seconds since 1970 (SOURCE_DATE_EPOCH, the commit time; required)")
	out := flag.String("out", "dist", "the directory to write oci/ (the layout) and hostprov.oci.tar (the archive) into")
	flag.Parse()
	if flag.NArg() != 0 || *version == "" || *created == "" {
		flag.Usage()
		return errors.New("-version and -created are required, and no arguments")
	}
	secs, err := strconv.ParseInt(*created, 10, 64)
	if err != nil {
		return fmt.Errorf("-created %q: want seconds since 1970: %v", *created, err)
	}
	spec := ociimage.Spec{
		Version:  *version,
		Revision: *revision,
		Created:  time.Unix(secs, 0).UTC(),
		Source:   source(),
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp(*out, ".build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	bins := map[string]string{}
	for _, p := range ociimage.Platforms {
		bin := filepath.Join(work, "hostprov-"+p.OS+"-"+p.Architecture)
		fmt.Fprintf(os.Stderr, "image: building hostprov %s for %s\n", spec.Version, p)
		if err := ociimage.BuildBinary(ctx, ".", p, spec.Version, bin); err != nil {
			return err
		}
		bins[p.String()] = bin
	}
	idx, err := ociimage.Index(spec, bins)
	if err != nil {
		return err
	}
	dir := filepath.Join(*out, "oci")
	if err := ociimage.WriteLayout(dir, idx, spec.Version); err != nil {
		return err
	}
	archive := filepath.Join(*out, "hostprov.oci.tar")
	if err := ociimage.WriteArchive(dir, archive, spec.Created); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("image: %s (tag %s, index %s)\nimage: %s\n", dir, spec.Version, digest, archive)
	return nil
}

// source is the repository's URL, from the main module's path
// (github.com/hostprov/hostprov), which names where it is hosted.
func source() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Path != "" {
		return "https://" + bi.Main.Path
	}
	return "https://github.com/hostprov/hostprov"
}
