package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/hostprov/hostprov/internal/inputs"
	"github.com/hostprov/hostprov/internal/pipeline"
	"github.com/hostprov/hostprov/pkg/apply"
)

func newPlan() *cobra.Command {
	var (
		sf       specFlags
		nf       nodeFlags
		cf       changeFlags
		detailed bool
	)
	c := &cobra.Command{
		Use:   "plan [-f FILE]... | -d DIR [--detailed-exitcode] [-o text|json]",
		Short: "Show what apply would change on this node, and change nothing",
		Long: `Plan compares the spec with what hostprov installed earlier (its state) and with the
unit directory, and prints what apply would do: a unified diff of every unit file and
drop-in it would write or remove, the systemd actions in the order they run, and a
summary that counts units: "Plan: 1 to add, 2 to change, 0 to remove." or "No changes."

With --detailed-exitcode the exit code says the outcome, as Terraform's does:

  0  no changes
  1  an error (including a plan apply would refuse)
  2  changes: apply would change the node
  3  no changes, but drift: files hostprov wrote were edited since, and apply
     leaves them alone (apply --force overwrites them)

3 is the code status gives for drift as well. Plan needs neither root nor systemd.`,
		Args: specArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			err := func() error {
				opts, in, err := readForNode(c, &sf, &nf, &cf)
				if err != nil {
					return err
				}
				return planInputs(c, &sf, opts, in, nf.output, detailed)
			}()
			var ee *exitError
			if detailed && errors.As(err, &ee) && ee != errChanges && ee != errDrift && ee.code == ExitInvalid {
				ee.code = ExitFailure // 2 means "changes" here
			}
			return err
		},
	}
	sf.register(c)
	nf.register(c)
	cf.register(c)
	c.Flags().BoolVar(&detailed, "detailed-exitcode", false, "exit 0 for no changes, 2 for changes, 3 for drift only, 1 for an error")
	return c
}

// readForNode is what plan and apply start from: the options of the node
// with the changes' flags, and the inputs read.
func readForNode(c *cobra.Command, sf *specFlags, nf *nodeFlags, cf *changeFlags) (apply.Options, []inputs.File, error) {
	opts, err := nf.options()
	if err != nil {
		return opts, nil, err
	}
	cf.apply(&opts)
	in, err := sf.read(c)
	return opts, in, err
}

// planInputs prints the plan of the specs read (in), for plan and apply
// --dry-run. Inputs that are the ones the last apply recorded are planned
// from the state and the unit files, without rendering, as apply plans
// them; apply.NewPlanFromState declines when anything may differ (an
// edited file, a failed unit), and then the specs are rendered. A spec with
// warnings is rendered every time: apply records no inputs for it, so
// every plan prints its warnings. It fails when the plan has conflicts, and
// with detailed returns exit code 2 when it has changes and 3 when it has
// none but drift.
func planInputs(c *cobra.Command, sf *specFlags, opts apply.Options, in []inputs.File, output string, detailed bool) error {
	ctx := context.Background()
	opts.SpecDir = sf.specDir()
	opts.Inputs = sf.fingerprint(in)
	// Read once: plan takes no lock, so a second read could see
	// another apply's state.
	st, stErr := apply.LoadState(apply.StatePath(opts.StateDirPath()))
	var p *apply.Plan
	var r *pipeline.Result
	var err error
	if stErr == nil && opts.Inputs != "" && st.Inputs == opts.Inputs {
		// An error (a file that cannot be read) is left to the
		// rendered plan, which meets it too and says it as plan
		// always has.
		if fp, ok, ferr := apply.NewPlanFromState(ctx, st, opts); ok && ferr == nil {
			p = fp
		}
	}
	if p == nil {
		// An invalid spec is reported before a state that cannot be
		// read, as it was when plan always rendered first.
		if r, err = sf.build(c, in, &opts); err != nil {
			return err
		}
		if stErr != nil {
			return failure("%v", stErr)
		}
		p, err = apply.NewPlanSets(ctx, r.Sets, st, opts)
	}
	rerr := reportPlan(c, p, err, output, detailed)
	if err == nil && output == outputText && r != nil {
		writeDisruptions(c.ErrOrStderr(), p, r.Disruptions, false)
	}
	return rerr
}

// showPlan makes a plan from the state with makePlan and prints it,
// changing nothing and taking no lock (remove --dry-run). It fails when the
// plan has conflicts, and with detailed returns exit code 2 when it has
// changes and 3 when it has none but drift.
func showPlan(c *cobra.Command, opts apply.Options, output string, detailed bool,
	makePlan func(context.Context, *apply.State) (*apply.Plan, error)) error {
	st, err := apply.LoadState(apply.StatePath(opts.StateDirPath()))
	if err != nil {
		return failure("%v", err)
	}
	p, err := makePlan(context.Background(), st)
	return reportPlan(c, p, err, output, detailed)
}

// reportPlan prints the plan p that was made with the error err, or
// returns err. It fails when the plan has conflicts, and with detailed
// returns exit code 2 when it has changes and 3 when it has none but drift.
func reportPlan(c *cobra.Command, p *apply.Plan, err error, output string, detailed bool) error {
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	if err != nil {
		return failure("%v", err)
	}
	if err := printPlan(c.OutOrStdout(), p, output); err != nil {
		return failure("%v", err)
	}
	if len(p.Conflicts) > 0 {
		return failure("the plan has %d conflict(s); apply would refuse it (see above)", len(p.Conflicts))
	}
	switch {
	case !detailed:
	case p.HasChanges():
		return errChanges
	case hasDrift(p):
		return errDrift
	}
	return nil
}

// hasDrift reports whether the plan leaves alone files that were edited
// since hostprov wrote them.
func hasDrift(p *apply.Plan) bool {
	for _, f := range p.Files {
		if f.Drift {
			return true
		}
	}
	return false
}

// errChanges is plan's exit code 2 under --detailed-exitcode: the plan has
// changes. It is not an error and prints nothing.
var errChanges = &exitError{code: ExitChanges}

// errDrift is plan's exit code 3 under --detailed-exitcode: no changes, but
// files edited since hostprov wrote them, which apply leaves alone. A
// script that runs plan to decide whether to apply can tell "nothing to
// do" from "someone edited a unit by hand", which needs a person (or
// --force), and which a plain 0 would hide.
var errDrift = &exitError{code: ExitDrift}

func printPlan(w io.Writer, p *apply.Plan, output string) error {
	if output == outputJSON {
		return writeJSON(w, p.JSON())
	}
	return p.WriteText(w)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
