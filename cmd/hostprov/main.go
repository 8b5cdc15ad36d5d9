// Command hostprov turns a YAML hook spec into systemd units and emits them
// as instance user data or a directory of unit files.
package main

import (
	"os"

	"github.com/hostprov/hostprov/internal/cli"
)

func main() { os.Exit(cli.Main()) }
