package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/rogpeppe/go-internal/diff"
	"github.com/spf13/cobra"

	"github.com/hostprov/hostprov/internal/fsutil"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/units"
)

func newFmt() *cobra.Command {
	var write, list, showDiff bool
	c := &cobra.Command{
		Use:   "fmt [-w|-l|-d] [FILE...]",
		Short: "Canonicalise systemd unit files and drop-ins",
		Long: `fmt rewrites unit files in hostprov's canonical form, as gofmt does Go: sections in
a fixed order ([Unit], the type's section, others, [Install]), entries sorted by key,
continuation lines joined, comments kept with the entries they precede. Entries that
systemd could tell apart keep their order (repeated keys, empty resets, keys read into
one list or field such as Listen*= or Condition*=), so systemd loads exactly what it
loaded before; ExecStartPre= comes before ExecStart= and ExecStartPost= after it.

A file systemd would not load as meant is an error with its line: a line without '=',
an assignment before the first section, an Exec line systemd refuses. Every problem of
every file is reported, as validate reports a spec's (FILE:LINE:COL: error: message,
with a hint where there is more to say), and a file with one is left as it is.

Without FILE it reads standard input. By default it prints the result;
-w writes it back to the file, -l lists files whose formatting differs, -d prints a diff.`,
		RunE: func(c *cobra.Command, args []string) error {
			if write && len(args) == 0 {
				return invalid("-w needs FILE arguments: there is no file to write standard input back to")
			}
			if len(args) == 0 {
				data, err := io.ReadAll(c.InOrStdin())
				if err != nil {
					return failure("reading standard input: %v", err)
				}
				return fmtOne(c, hooks.StdinName, data, false, list, showDiff)
			}
			bad := false
			for _, a := range args {
				data, err := os.ReadFile(a)
				if err != nil {
					fmt.Fprintf(c.ErrOrStderr(), "hostprov: %v\n", err)
					bad = true
					continue
				}
				if err := fmtOne(c, a, data, write, list, showDiff); err != nil {
					if ee, ok := err.(*exitError); ok && ee.msg != "" {
						fmt.Fprintln(c.ErrOrStderr(), "hostprov: "+ee.msg)
					}
					bad = true
				}
			}
			if bad {
				return &exitError{code: ExitInvalid}
			}
			return nil
		},
	}
	c.Flags().BoolVarP(&write, "write", "w", false, "write the result back to the file")
	c.Flags().BoolVarP(&list, "list", "l", false, "list files whose formatting differs")
	c.Flags().BoolVarP(&showDiff, "diff", "d", false, "print a unified diff instead of the result")
	return c
}

func fmtOne(c *cobra.Command, name string, data []byte, write, list, showDiff bool) error {
	out, errs := units.FormatAll(data)
	if len(errs) > 0 {
		diags := make(hooks.Diagnostics, len(errs))
		for i, pe := range errs {
			diags[i] = hooks.Diagnostic{Severity: hooks.Error, Pos: hooks.Position{File: name, Line: pe.Line, Column: max(pe.Column, 1)},
				Message: pe.Msg, Hint: pe.Hint}
		}
		printDiags(c.ErrOrStderr(), diags)
		return invalid("%s: %s; not formatted", name, plural(len(errs), "error"))
	}
	same := bytes.Equal(out, data)
	w := c.OutOrStdout()
	if list && !same {
		fmt.Fprintln(w, name)
	}
	if showDiff && !same {
		w.Write(diff.Diff(name+".orig", data, name, out))
	}
	if write && !same {
		// Where the name leads: a link to a unit file stays a link.
		if err := fsutil.WriteOutput(name, out, 0o644); err != nil {
			return failure("%v", err)
		}
	}
	if !list && !showDiff && !write {
		w.Write(out)
	}
	return nil
}
