//go:build !kube

package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

// kubeBuild says whether this build has the Kubernetes commands.
//
// The agent and the controller link client-go and controller-runtime,
// whose package initialisation alone costs a start of hostprov some 12 ms
// and 30 MB (the libraries register every API type they know). A node
// runs hostprov render, apply and status at boot and from scripts, where
// that would be most of each run: the node's build (make build, the
// packages) leaves them out, and the container image's build, which runs
// them, has them (go build -tags kube, make image).
const kubeBuild = false

// kubeCommands are, in a build without them, commands that say where the
// agent and the controller are, hidden from the help.
func kubeCommands() []*cobra.Command {
	var cs []*cobra.Command
	for _, name := range []string{"agent", "controller", "retry"} {
		cs = append(cs, &cobra.Command{
			Use: name, Hidden: true, DisableFlagParsing: true,
			RunE: func(*cobra.Command, []string) error {
				msg := fmt.Sprintf("hostprov %s runs in hostprov's container image (make image, or go build -tags kube); this build leaves the Kubernetes commands out, to start fast on a node", name)
				if name == "retry" {
					msg += `; or increase the HostHooks' spec.retry with kubectl: kubectl patch hosthooks NAME --type merge -p '{"spec":{"retry":N}}', N its value plus one`
				}
				return invalid("%s", msg)
			},
		})
	}
	return cs
}
