package cli

import "github.com/spf13/cobra"

// Command returns hostprov's whole command tree, as Run executes it, with
// cobra's completion command and --version, which Execute would add on its
// own: what the packaging program writes the man pages and the shell
// completions from, so that they describe exactly the commands and flags of
// the binary beside them.
func Command() *cobra.Command {
	root := newRoot()
	root.InitDefaultCompletionCmd()
	root.InitDefaultVersionFlag()
	return root
}
