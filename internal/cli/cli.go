// Package cli is hostprov's command line: a cobra command tree built by a
// function, run by Main, with every byte of output going through the
// command's writers so that tests can capture it.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

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
			fmt.Fprintln(stderr, "hostprov: "+ee.msg)
		}
		return ee.code
	}
	// Commands return *exitError for everything they find; anything
	// else comes from cobra itself: an unknown command or flag, or the
	// wrong number of arguments.
	fmt.Fprintf(stderr, "hostprov: %v\nRun 'hostprov --help' for usage.\n", err)
	return ExitInvalid
}

// exitError carries an exit code out of a command; msg may be empty when
// the command has printed its problems already (diagnostics).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func invalid(format string, args ...any) error {
	return &exitError{code: ExitInvalid, msg: fmt.Sprintf(format, args...)}
}

func failure(format string, args ...any) error {
	return &exitError{code: ExitFailure, msg: fmt.Sprintf(format, args...)}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "hostprov",
		Short: "Turn a YAML hook spec into systemd units for boot-time provisioning",
		Long: `hostprov turns a short YAML hook spec into canonical systemd units and emits them
as instance user data (Ignition) or as a directory of unit files.

  hostprov render -f hooks.yaml > ignition.json    # Ignition config for user data
  hostprov render -f hooks.yaml --format units     # the units, to read
  hostprov validate -f hooks.yaml --strict         # check a spec
  hostprov fmt -w my.service                       # canonicalise unit files`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRender(), newValidate(), newFmt(), newVersion(), newPlan(), newApply(), newRemove(), newStatus(), newKops())
	return root
}

func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print hostprov's version",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			fmt.Fprintln(c.OutOrStdout(), "hostprov", version())
			return nil
		},
	}
}

func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
