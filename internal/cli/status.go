package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hostprov/hostprov/internal/pipeline"
	"github.com/hostprov/hostprov/pkg/apply"
)

func newStatus() *cobra.Command {
	var (
		nf   nodeFlags
		sets []string
		dir  string
	)
	c := &cobra.Command{
		Use:   "status [--set NAME]... [-d DIR] [-o text|json]",
		Short: "Show every unit hostprov installed: its state, result and drift",
		Long: `Status lists every unit hostprov installed on this node (from its state), with what
systemd says of it (load, active and sub state, result, how its main process exited,
when it last started and stopped, whether systemd needs a reload to see its file) and
whether its files still have the bytes hostprov wrote (drift). With --root only the
files and enablement are known.

Each unit belongs to the spec set that installed it (the SET column). --set NAME
shows only that set's units (repeat it for several); -d DIR those of the specs of
DIR, as apply -d DIR reads them (each spec's metadata.name, or its file's name). The
exit code then speaks of those units only.

The exit code says how the node is, for scripts and health checks:

  0  every unit is as hostprov left it, and none has failed
  1  an error: the state could not be read, systemd could not be reached, or it
     could not tell about a unit (the table says which)
  2  invalid usage
  3  drift: a file was edited since hostprov wrote it or is missing, or an apply
     did not finish; apply puts it right (with --force for edited files)
  4  a unit failed: its last run or start failed (a command hook: a step failed),
     or systemd could not load it; see the table and journalctl -u UNIT

When several hold, the first of 4, 1 and 3 wins: a failed unit needs a person
first. 3 is the code plan --detailed-exitcode gives for drift as well. Interrupted
by SIGINT or SIGTERM, status exits with 130 or 143 and prints no table; each call
to systemd has 30s to be answered.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			opts, err := nf.options()
			if err != nil {
				return err
			}
			ctx, stop := signalContext(c)
			defer stop()
			for _, p := range apply.Permissions(opts) {
				fmt.Fprintln(c.ErrOrStderr(), "hostprov: warning: "+p.String())
			}
			st, err := apply.LoadState(apply.StatePath(opts.StateDirPath()))
			if err != nil {
				return failure("%v", err)
			}
			var sd apply.Systemd = noSystemd{}
			if len(st.Units) > 0 {
				var closeFn func()
				if sd, closeFn, err = nf.systemd(ctx, opts); err != nil {
					if ierr := interrupted(ctx, "it was connecting to systemd"); ierr != nil {
						return ierr
					}
					return err
				}
				defer closeFn()
			}
			if dir != "" {
				names, err := setsOfDir(c, dir)
				if err != nil {
					return err
				}
				sets = append(sets, names...)
			}
			if c.Flags().Changed("set") || dir != "" {
				st = onlySets(st, sets)
			}
			rs, err := apply.Report(ctx, sd, st, opts)
			// What systemd did not say before the signal would show
			// as errors of the units: say the one thing that happened.
			if ierr := interrupted(ctx, "systemd was not asked about every unit"); ierr != nil {
				return ierr
			}
			if err != nil {
				return failure("%v", err)
			}
			if nf.output == outputJSON {
				if err := writeJSON(c.OutOrStdout(), rs); err != nil {
					return failure("%v", err)
				}
				return statusExit(rs)
			}
			if len(rs) == 0 {
				fmt.Fprintf(c.OutOrStdout(), "hostprov has installed no units here (state: %s)\n", apply.StatePath(opts.StateDirPath()))
				return nil
			}
			writeStatus(c.OutOrStdout(), rs)
			return statusExit(rs)
		},
	}
	nf.register(c)
	c.Flags().StringArrayVar(&sets, "set", nil, "show only the units of this spec set (repeat for several)")
	c.Flags().StringVarP(&dir, "dir", "d", "", "show only the units of the spec sets of this directory's *.yaml files")
	return c
}

// setsOfDir names the spec sets of the specs of dir, as apply -d reads
// them; a spec it cannot read is an error, with its diagnostics.
func setsOfDir(c *cobra.Command, dir string) ([]string, error) {
	sf := specFlags{dir: dir}
	in, err := sf.read(c)
	if err != nil {
		return nil, err
	}
	// Only the names of the sets are wanted: each file is read as a
	// hostprov spec, and a kops manifest is one with errors.
	r, err := pipeline.Load(pipeline.Files(in), pipeline.Options{Dir: dir, SpecsOnly: true})
	if r, err = sf.report(c, r, err); err != nil {
		return nil, err
	}
	var names []string
	for _, s := range r.Sets {
		names = append(names, s.Name)
	}
	return names, nil
}

// onlySets is the state with only the units and paths of the named spec
// sets.
func onlySets(st *apply.State, names []string) *apply.State {
	keep := map[string]bool{}
	for _, n := range names {
		keep[n] = true
	}
	out := *st
	out.Units, out.Paths = nil, nil
	for _, u := range st.Units {
		if keep[u.Set] {
			out.Units = append(out.Units, u)
		}
	}
	for _, p := range st.Paths {
		if keep[p.Set] {
			out.Paths = append(out.Paths, p)
		}
	}
	return &out
}

// Exit codes of status and plan --detailed-exitcode, besides ExitOK,
// ExitFailure and ExitInvalid (see their --help). Drift has the same code
// in both, so that a script can treat it the same way; a failed unit,
// which only status sees, has its own, because it needs a person to look
// at the unit where drift needs an apply.
const (
	ExitChanges    = 2 // plan: apply would change the node
	ExitDrift      = 3 // files not as hostprov wrote them (status: or an apply unfinished)
	ExitUnitFailed = 4 // status: a unit failed
)

// statusExit is status's exit code for the reports: nil when all is well.
// The table (or the JSON) has said everything, so the error prints nothing.
func statusExit(rs []apply.UnitReport) error {
	var failed, unknown, drift bool
	for _, r := range rs {
		// A unit whose start failed at the last apply counts as failed
		// still when systemd could not be asked about it now (a report
		// with an Error has no systemd state).
		failed = failed || r.Failed() || r.Retry && r.Error != ""
		unknown = unknown || r.Error != ""
		drift = drift || r.Drift || r.Incomplete
	}
	switch {
	case failed:
		return &exitError{code: ExitUnitFailed}
	case unknown:
		return &exitError{code: ExitFailure}
	case drift:
		return &exitError{code: ExitDrift}
	}
	return nil
}

// writeStatus prints the reports as a table, one unit a line.
func writeStatus(w io.Writer, rs []apply.UnitReport) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "UNIT\tSET\tHOOK\tLOAD\tENABLED\tACTIVE\tSUB\tRESULT\tEXIT\tSTARTED\tSTOPPED\tFILES\tRELOAD")
	for _, r := range rs {
		files := "ok"
		if r.Drift {
			var bad []string
			for _, f := range r.Files {
				if f.State != "ok" {
					bad = append(bad, f.State+":"+f.Path)
				}
			}
			files = strings.Join(bad, ",")
		}
		if r.Incomplete {
			files += " (apply unfinished)"
		}
		reload := "no"
		if r.NeedDaemonReload {
			reload = "needed"
		}
		if r.Unit == "" {
			reload = "-"
		}
		unit := r.Unit
		switch {
		case unit == "" && r.Hook != "":
			unit = "(no unit)"
		case unit == "":
			unit = "(users and groups)"
		}
		if r.StatusOf != r.Unit {
			unit += " (" + r.StatusOf + ")"
		}
		load := dash(r.LoadState)
		if r.Error != "" {
			load = "error: " + r.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", unit, dash(r.Set), dash(r.Hook), load, dash(r.UnitFileState), dash(r.ActiveState),
			dash(r.SubState), dash(r.Result), exitText(r), when(r.ActiveEnter), when(r.InactiveEnter), files, reload)
	}
	tw.Flush()
	for _, r := range rs {
		if r.Phase != "" {
			writeSteps(w, r)
		}
	}
}

// writeSteps prints a command hook's phase, each step's outcome, and the
// journal of a failed run.
func writeSteps(w io.Writer, r apply.UnitReport) {
	fmt.Fprintf(w, "\n%s: %s\n", r.Unit, r.Phase)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for i, s := range r.Steps {
		state, outcome := s.State, ""
		switch {
		case s.Reason == "timed out":
			outcome = s.Reason
		case s.ExitCode != nil:
			outcome = fmt.Sprintf("%s with %d", s.Reason, *s.ExitCode)
		case s.Signal != nil:
			outcome = fmt.Sprintf("%s %d", s.Reason, *s.Signal)
		case s.Reason != "":
			// A state known without a process to show for it (inferred
			// from the order of the steps, say) carries its reason
			// beside it, as -o json does, so that the note under the
			// table can name the mark.
			state += " (" + s.Reason + ")"
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\n", i+1, s.Name, state, dash(outcome), when(s.Start), when(s.End))
	}
	tw.Flush()
	if r.StepsNote != "" {
		fmt.Fprintln(w, "  ("+r.StepsNote+")")
	}
	if len(r.Journal) > 0 {
		fmt.Fprintln(w, "  last journal lines:")
		for _, l := range r.Journal {
			fmt.Fprintln(w, "    "+l)
		}
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func exitText(r apply.UnitReport) string {
	switch r.ExecMainCode {
	case 0:
		return "-"
	case 1: // CLD_EXITED
		return fmt.Sprint(r.ExecMainStatus)
	}
	return fmt.Sprintf("signal %d", r.ExecMainStatus)
}

func when(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}
