package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/render"
)

// specFlags are the flags of every command that reads a hook spec.
type specFlags struct {
	file   string
	strict bool
}

func (f *specFlags) register(c *cobra.Command) {
	c.Flags().StringVarP(&f.file, "file", "f", "hostprov.yaml", `hook spec to read ("-" for standard input)`)
	c.Flags().BoolVar(&f.strict, "strict", false, "treat warnings as errors")
}

// load reads the spec and runs the render pipeline, printing every
// diagnostic to stderr. It fails with ExitInvalid when the spec has errors
// (or warnings under --strict), so that nothing is written.
func (f *specFlags) load(c *cobra.Command) ([]render.Unit, error) {
	name, data, err := readSpec(c, f.file)
	if err != nil {
		return nil, err
	}
	us, diags := render.Build(name, data)
	printDiags(c.ErrOrStderr(), diags)
	if diags.HasErrors(f.strict) {
		return nil, &exitError{code: ExitInvalid, msg: summary(name, diags, f.strict)}
	}
	return us, nil
}

func readSpec(c *cobra.Command, file string) (string, []byte, error) {
	if file == "-" {
		data, err := io.ReadAll(c.InOrStdin())
		if err != nil {
			return "", nil, failure("reading standard input: %v", err)
		}
		return "<stdin>", data, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		if os.IsNotExist(err) {
			return "", nil, invalid("%s: no such file; give the hook spec with -f FILE (or -f - for standard input)", file)
		}
		return "", nil, failure("%v", err)
	}
	return file, data, nil
}

func printDiags(w io.Writer, diags hooks.Diagnostics) {
	for _, d := range diags {
		fmt.Fprintln(w, d.String())
	}
}

// summary says why nothing was written, as the last line of the output.
func summary(file string, diags hooks.Diagnostics, strict bool) string {
	var errs, warns int
	for _, d := range diags {
		if d.Severity == hooks.Error {
			errs++
		} else {
			warns++
		}
	}
	s := fmt.Sprintf("%s: %s", file, plural(errs, "error"))
	if warns > 0 {
		s += ", " + plural(warns, "warning")
		if strict {
			s += " (fatal under --strict)"
		}
	}
	return s + "; nothing written"
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// Output formats of render.
const (
	formatIgnition = "ignition"
	formatUnits    = "units"
	formatDir      = "dir"
)

func newRender() *cobra.Command {
	var (
		sf     specFlags
		format string
		out    string
		pretty bool
	)
	c := &cobra.Command{
		Use:   "render [-f FILE] [--format ignition|units|dir] [--out DIR]",
		Short: "Render a hook spec to an Ignition config, a unit listing or a unit directory",
		Long: `Render reads a hook spec, checks it, and writes its units:

  --format ignition   an Ignition config (spec ` + render.IgnitionVersion + `) on standard output (the default)
  --format units      every unit file after a "# NAME" line, to read
  --format dir        unit files and NAME.d/ drop-ins under --out DIR

Nothing is written when the spec has an error.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			switch format {
			case formatIgnition, formatUnits:
				if out != "" {
					return invalid("--out is only for --format dir; --format %s writes to standard output", format)
				}
			case formatDir:
				if out == "" {
					return invalid("--format dir needs --out DIR, the directory to write the units to")
				}
			default:
				return invalid("unknown --format %q: use ignition, units or dir", format)
			}
			us, err := sf.load(c)
			if err != nil {
				return err
			}
			switch format {
			case formatUnits:
				_, err = c.OutOrStdout().Write(render.Text(us))
			case formatDir:
				if err := render.WriteDir(out, us); err != nil {
					return failure("writing units: %v", err)
				}
			default:
				var b []byte
				if b, err = render.Ignition(us, pretty); err != nil {
					return failure("building the Ignition config: %v", err)
				}
				_, err = c.OutOrStdout().Write(b)
			}
			if err != nil {
				return failure("%v", err)
			}
			return nil
		},
	}
	sf.register(c)
	c.Flags().StringVar(&format, "format", formatIgnition, "output format: ignition, units or dir")
	c.Flags().StringVarP(&out, "out", "o", "", "directory to write to, for --format dir")
	c.Flags().BoolVar(&pretty, "pretty", false, "indent the Ignition JSON")
	c.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(
		[]string{formatIgnition, formatUnits, formatDir}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

func newValidate() *cobra.Command {
	var sf specFlags
	c := &cobra.Command{
		Use:   "validate [-f FILE] [--strict]",
		Short: "Check a hook spec and report every problem with its file:line:col",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			us, err := sf.load(c)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "%s: ok, %s\n", displayName(sf.file), plural(len(us), "unit"))
			return nil
		},
	}
	sf.register(c)
	return c
}

func displayName(file string) string {
	if file == "-" {
		return "<stdin>"
	}
	return file
}
