// Command package builds hostprov's .deb and .rpm packages, for amd64 and
// arm64, with nfpm used as a library: make package runs it.
//
// The version is the VERSION file's (-version overrides it, for a test of
// an upgrade): one place, read by this program alone, stamped into the
// binary with -X and given to both package formats. A file rather than
// `git describe` so that a source tree without git history (an archive, a
// shallow clone without tags) packages the same version.
//
// The packages' date is SOURCE_DATE_EPOCH, the reproducible-builds
// convention, or else the date of the commit built: never the clock, so
// that one commit packages to the same bytes whenever it is built.
//
// Usage, from the repository's root:
//
//	go run ./internal/cmd/package -maintainer "Name <address>" [-out dist] [-arch amd64,arm64] [-format deb,rpm]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() { os.Exit(run()) }

func run() int {
	var c Config
	var arches, formats string
	flag.StringVar(&c.Root, "root", ".", "the repository's root")
	flag.StringVar(&c.Out, "out", "dist", "where the packages are written")
	flag.StringVar(&c.Version, "version", "", "the version (default: the VERSION file's)")
	flag.StringVar(&arches, "arch", "amd64,arm64", "Go architectures to build, comma-separated")
	flag.StringVar(&formats, "format", "deb,rpm", "package formats, comma-separated")
	flag.StringVar(&c.Maintainer, "maintainer", "", `who ships the packages, "Name <address>" (required)`)
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "package: unexpected arguments %q\n", flag.Args())
		return 2
	}
	c.Arches = strings.Split(arches, ",")
	c.Formats = strings.Split(formats, ",")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	built, err := Build(ctx, c)
	for _, p := range built {
		fmt.Println(p)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "package: %v\n", err)
		return 1
	}
	return 0
}
