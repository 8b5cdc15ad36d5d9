// Command clidoc writes docs/cli.md, hostprov's command-line reference,
// from the command tree (internal/clidoc): make generate runs it, and
// internal/clidoc's test fails when the file is out of date.
//
// It documents the build with the Kubernetes commands, and refuses to run
// in a build without them:
//
//	go run -tags kube ./internal/gen/clidoc [-o docs/cli.md]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/hostprov/hostprov/internal/cli"
	"github.com/hostprov/hostprov/internal/clidoc"
)

func main() {
	out := flag.String("o", "docs/cli.md", "the file to write")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "clidoc:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	// Some flags take their default from the environment (the agent's
	// --node-name from $NODE_NAME): the reference gives the defaults of an
	// empty environment, so that it does not depend on where it is made.
	os.Clearenv()
	root := cli.Command()
	if !clidoc.KubeBuild(root) {
		return fmt.Errorf("this build has no Kubernetes commands to document: run it with go run -tags kube")
	}
	return os.WriteFile(out, clidoc.Markdown(root), 0o644)
}
