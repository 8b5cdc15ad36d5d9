// Package cli is hostprov's command line: a cobra command tree built by a
// function, run by Main, with every byte of output going through the
// command's writers so that tests can capture it.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes. Invalid input (a spec or unit with errors, a bad flag) is
// told apart from a failure to do the work (a file that cannot be written).
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitInvalid = 2
)

// Version is set at build time with -ldflags "-X .../internal/cli.Version=v1.2.3";
// without it, the module version from the build information is used.
var Version = ""

// Main runs hostprov with the process's arguments and standard streams and
// returns the exit code.
func Main() int {
	return Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// Run runs hostprov with args and returns the exit code. Errors are printed
// once, to stderr, by Run itself.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			who := "hostprov"
			if ee.cmd != "" {
				who = ee.cmd
			}
			fmt.Fprintln(stderr, who+": "+ee.msg)
		}
		return ee.code
	}
	// Commands return *exitError for everything they find; anything
	// else comes from cobra itself: an unknown command or flag, or the
	// wrong number of arguments.
	fmt.Fprintf(stderr, "hostprov: %v\n", err)
	if strings.Contains(err.Error(), "shorthand flag: 'v'") {
		// Many tools read -v as verbose and some as version; hostprov
		// has neither, and says which flag there is.
		fmt.Fprintln(stderr, "\thint: hostprov has no -v; hostprov --version (or hostprov version) prints the version")
	}
	fmt.Fprintln(stderr, "Run 'hostprov --help' for usage.")
	return ExitInvalid
}

// exitError carries an exit code out of a command; msg may be empty when
// the command has printed its problems already (diagnostics).
type exitError struct {
	code int
	msg  string
	// cmd, when set, is printed before msg instead of "hostprov": the
	// command a usage mistake is about ("hostprov render").
	cmd string
}

func (e *exitError) Error() string { return e.msg }

func invalid(format string, args ...any) error {
	return &exitError{code: ExitInvalid, msg: fmt.Sprintf(format, args...)}
}

func failure(format string, args ...any) error {
	return &exitError{code: ExitFailure, msg: fmt.Sprintf(format, args...)}
}

// nodeHelp is what the root's help says of the Kubernetes commands in a
// build without them.
const nodeHelp = `

On Kubernetes, hostprov's container image runs the agent (a DaemonSet) and the
controller; this build leaves them out, to start fast on a node.`

// kubeHelp lists the Kubernetes commands, in a build with them.
const kubeHelp = `

On Kubernetes (the container image's hostprov):
  hostprov agent                   # DaemonSet: apply the HostHooks that select this node
  hostprov controller              # roll HostHooks out and sum up their NodeHooks
  hostprov retry HOSTHOOKS         # start again the hooks that failed on its nodes`

func newRoot() *cobra.Command {
	kube := nodeHelp
	if kubeBuild {
		kube = kubeHelp
	}
	root := &cobra.Command{
		Use:   "hostprov",
		Short: "Turn a YAML hook spec into systemd units for boot-time provisioning",
		Long: `hostprov turns a short YAML hook spec into canonical systemd units. It renders them
as instance user data (Ignition, Butane, cloud-init), as hooks for a kops cluster spec
or as a directory of unit files, or installs them on the node it runs on.

Render and check (no root, no systemd):
  hostprov render -f hooks.yaml > ignition.json              # Ignition config
  hostprov render -f hooks.yaml --format butane > node.bu    # Butane config
  hostprov render -f hooks.yaml --format cloud-init          # #cloud-config
  hostprov render -f hooks.yaml --format kops                # hooks: for a kops spec
  hostprov render -f hooks.yaml --format dir --out DIR       # unit files
  hostprov validate -f hooks.yaml --strict                   # check a spec
  hostprov fmt -w my.service                                 # canonicalise unit files

On a node:
  hostprov plan -f hooks.yaml      # what apply would change, as a diff
  hostprov apply -f hooks.yaml     # write, reload once, enable, start
  hostprov status                  # each unit's state, result and drift
  hostprov remove NAME             # stop, disable and delete a hook's units` + kube,
		// The version line (hostprov --version) is version's.
		Version:       versionLine(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	// --version alone: cobra would add -v as its shorthand, which most
	// tools of the field read as verbose (or not at all), so that a -v
	// typed out of habit printed the version and did nothing asked.
	root.Flags().Bool("version", false, "print hostprov's version, as hostprov version does")
	root.AddCommand(newRender(), newValidate(), newFmt(), newImport(), newVersion(), newPlan(), newApply(), newRemove(), newStatus(), newKops())
	root.AddCommand(kubeCommands()...)
	return root
}

// registerOutput adds -o, --output: text or json, as every command that
// can print JSON takes it.
func registerOutput(c *cobra.Command, output *string) {
	c.Flags().StringVarP(output, "output", "o", outputText, "output format: text or json")
	c.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{outputText, outputJSON}, cobra.ShellCompDirectiveNoFileComp))
}
