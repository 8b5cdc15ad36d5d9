package cli

// validate: the checks of render without its output, as text or as JSON.

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// newValidate is hostprov validate.
func newValidate() *cobra.Command {
	var (
		sf             specFlags
		rf             renderFlags
		format, output string
	)
	c := &cobra.Command{
		Use:   "validate [-f FILE]... | -d DIR [--strict] [--format F] [-o text|json]",
		Short: "Check a hook spec and report every problem with its file:line:col",
		Long: `validate reads hook specs (or kops manifests) and reports every problem at once, each as
file:line:col: error|warning: path: message, with a hint, and writes nothing.
The last line sums up: "spec.yaml: ok, 2 units" when there is nothing to say,
"spec.yaml: 2 units, 1 warning" when there are warnings (exit code 0, or 2 with
--strict), and "spec.yaml: 1 error; nothing written" on standard error with exit
code 2 when there are errors.

--format F also runs the checks of the output render --format F would write
(` + strings.Join(formatNames(), ", ") + `), with the flags that choose it (--ignition-version,
--variant, --butane-version, --kops-api-version): a directory of mode 01777 is valid,
but Ignition before 3.6.0 cannot make it. Nothing is written, not even for dir.

-o json prints one JSON object on standard output instead, and nothing on standard
error (exit codes as above):

  {"valid": false, "files": ["spec.yaml"], "format": "ignition",
   "specSets": 1, "units": 0, "errors": 1, "warnings": 0,
   "diagnostics": [{"severity": "error", "file": "spec.yaml", "line": 6,
     "column": 5, "path": "hooks[0].exec", "message": "...", "hint": "..."}]}

files lists -f's files (or dir, -d's directory); format, path and hint are left
out when empty; units and specSets count what the spec makes (0 when it has errors).
A problem found before the spec is read (a missing file, a bad flag) is a line on
standard error, as always.`,
		Args: specArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if output != outputText && output != outputJSON {
				return invalid("unknown -o %q: use text or json", output)
			}
			of, err := validateFormat(c, format, &rf)
			if err != nil {
				return err
			}
			sf.collect = output == outputJSON
			var us []compile.Unit
			var sets int
			r, err := sf.load(c)
			if err == nil {
				us, sets = r.Units, len(r.Sets)
			}
			if err == nil && of != nil {
				rf.storage = r.Storage
				err = sf.outputVerdict(c, of.write(io.Discard, &rf, us))
			}
			var ee *exitError
			if err != nil && !(errors.As(err, &ee) && ee.code == ExitInvalid && sf.diagnosed) {
				// Not a verdict on the spec: a file that does not
				// read, an output that cannot be built.
				return err
			}
			if err != nil {
				us = nil
			}
			if output == outputJSON {
				if jerr := writeJSON(c.OutOrStdout(), sf.validation(format, us, sets, err == nil)); jerr != nil {
					return failure("%v", jerr)
				}
				if err != nil {
					return &exitError{code: ExitInvalid}
				}
				return nil
			}
			if err != nil {
				return err
			}
			sf.writeValid(c.OutOrStdout(), len(us), sets)
			return nil
		},
	}
	sf.register(c)
	c.Flags().StringVar(&format, "format", "", "also run the checks of this render output: "+orList(formatNames()))
	registerOutput(c, &output)
	c.Flags().StringVar(&rf.ignitionVersion, "ignition-version", "", "Ignition spec version, for --format ignition and butane")
	c.Flags().StringVar(&rf.variant, "variant", "", "Butane variant, for --format butane")
	c.Flags().StringVar(&rf.butaneVersion, "butane-version", "", "Butane spec version, for --format butane")
	c.Flags().StringVar(&rf.kopsAPIVersion, "kops-api-version", "", "kops API version of the hooks, for --format kops")
	c.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(formatNames(), cobra.ShellCompDirectiveNoFileComp))
	return c
}

// validateFormat is the output of --format, whose checks validate runs
// too, or nil; its flags are checked. Without --format, a flag of a
// format's is a usage mistake.
func validateFormat(c *cobra.Command, format string, rf *renderFlags) (*outputFormat, error) {
	if format == "" {
		for _, name := range formatSpecificFlags {
			if c.Flags().Changed(name) {
				return nil, invalid("--%s is for --format: it chooses what the output's checks check", name)
			}
		}
		return nil, nil
	}
	i := slices.IndexFunc(outputFormats, func(f outputFormat) bool { return f.name == format })
	if i < 0 {
		return nil, invalid("unknown --format %q: use %s", format, orList(formatNames()))
	}
	of := &outputFormats[i]
	if err := checkFormatFlags(c, *of); err != nil {
		return nil, err
	}
	rf.check = true
	if of.check != nil {
		if err := of.check(rf); err != nil {
			return nil, err
		}
	}
	return of, nil
}

// writeValid writes the last line of a validate that found no error: what
// the specs make, and how many warnings they have.
func (f *specFlags) writeValid(w io.Writer, units, sets int) {
	label := f.dir
	if label == "" {
		label = f.fileNames()
	}
	counts := plural(units, "unit")
	if f.dir != "" {
		counts = plural(sets, "spec set") + ", " + counts
	}
	if f.warnings > 0 {
		fmt.Fprintf(w, "%s: %s, %s\n", label, counts, plural(f.warnings, "warning"))
		return
	}
	fmt.Fprintf(w, "%s: ok, %s\n", label, counts)
}

// validation is validate -o json's object; its field names are stable.
type validation struct {
	Valid       bool             `json:"valid"`
	Files       []string         `json:"files,omitempty"`
	Dir         string           `json:"dir,omitempty"`
	Format      string           `json:"format,omitempty"`
	SpecSets    int              `json:"specSets"`
	Units       int              `json:"units"`
	Errors      int              `json:"errors"`
	Warnings    int              `json:"warnings"`
	Diagnostics []diagnosticJSON `json:"diagnostics"`
}

// diagnosticJSON is one problem of validate -o json.
type diagnosticJSON struct {
	Severity string `json:"severity"`
	File     string `json:"file"`
	Line     int    `json:"line,omitempty"`
	Column   int    `json:"column,omitempty"`
	Path     string `json:"path,omitempty"`
	Message  string `json:"message"`
	Hint     string `json:"hint,omitempty"`
}

// validation sums up what validate found, for -o json.
func (f *specFlags) validation(format string, us []compile.Unit, sets int, valid bool) validation {
	v := validation{Valid: valid, Dir: f.dir, Format: format, Units: len(us), Diagnostics: []diagnosticJSON{}}
	if valid {
		v.SpecSets = sets
	}
	if f.dir == "" {
		for _, file := range f.files {
			v.Files = append(v.Files, displayName(file))
		}
	}
	for _, d := range f.collected {
		if d.Severity == hooks.Error {
			v.Errors++
		} else {
			v.Warnings++
		}
		v.Diagnostics = append(v.Diagnostics, diagnosticJSON{Severity: d.Severity.String(), File: d.Pos.File,
			Line: d.Pos.Line, Column: d.Pos.Column, Path: d.Path, Message: d.Message, Hint: d.Hint})
	}
	return v
}
