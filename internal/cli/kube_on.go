//go:build kube

package cli

import "github.com/spf13/cobra"

// kubeBuild says whether this build has the Kubernetes commands: the
// container image's does (go build -tags kube; see kube_off.go).
const kubeBuild = true

func kubeCommands() []*cobra.Command {
	return []*cobra.Command{newAgent(), newController(), newRetry()}
}
