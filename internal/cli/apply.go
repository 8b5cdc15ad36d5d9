package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hostprov/hostprov/internal/inputs"
	"github.com/hostprov/hostprov/internal/pipeline"
	"github.com/hostprov/hostprov/internal/sdbus"
	"github.com/hostprov/hostprov/pkg/apply"
)

// applyResult is apply's and remove's JSON output.
type applyResult struct {
	Plan   apply.PlanJSON `json:"plan"`
	Events []apply.Event  `json:"events"`
	Counts apply.Counts   `json:"counts"`
	Error  string         `json:"error,omitempty"`
}

func newApply() *cobra.Command {
	var (
		sf     specFlags
		nf     nodeFlags
		cf     changeFlags
		dryRun bool
		noWait bool
	)
	c := &cobra.Command{
		Use:   "apply [-f FILE]... | -d DIR [--dry-run] [--no-prune] [--no-start] [--adopt] [--force] [--timeout DURATION]",
		Short: "Install the spec's units on this node: write, reload once, enable, start",
		Long: `Apply makes this node match the spec. It writes only the unit files and drop-ins whose
bytes differ (atomically), reloads systemd once if anything changed, enables, disables
and masks units as the spec says, starts new units and restarts changed ones, and
removes the units of earlier applies that the spec no longer has (stop, disable,
delete, reload) unless --no-prune.

It never touches a file it did not write: a unit file in the way is an error unless
--adopt, and a file edited by hand since hostprov wrote it is left alone (and
reported) unless --force. Every action is logged to stderr and to the journal; with
-o json the plan, the actions and their counts are printed as JSON.

Each spec is a spec set that owns its units: its metadata.name, or its file's name
without .yaml. -f may be repeated, and -d DIR applies every *.yaml of DIR (as
/etc/hostprov/hooks.d), each its own set, with one reload for all; a set prunes
only its own units, and a spec file removed from DIR is a set whose units go. -d
reads DIR again when done, and applies again if a spec changed meanwhile.

With --root DIR it works offline on a node's file system mounted at DIR: it writes
the files and the enable links systemctl would make, and talks to no systemd.

It waits for systemd, but never for ever: connecting and each call have 30s, and each
start, restart and stop job, and the daemon-reload, has --timeout (10m; 0 waits as long
as systemd works on it). A start of a hook that legitimately takes longer needs a longer
--timeout. When systemd does not answer, or is re-executed or dies during a wait, apply
stops waiting at once and says what to check; a job it stopped waiting for may go on.

SIGTERM or SIGINT (^C) stops an apply where it is: a file being written is written
whole (or not at all), jobs already queued go on in systemd, the lock is released,
and it exits with 143 (SIGTERM) or 130 (SIGINT) saying what it left. Run apply again
to finish. A second signal ends hostprov at once.`,
		Args: specArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			opts, in, err := readForNode(c, &sf, &nf, &cf)
			if err != nil {
				return err
			}
			if dryRun || sf.dir == "" {
				return applyInputs(c, &sf, &nf, opts, in, dryRun, noWait)
			}
			// A change to the directory while an apply of it runs is not
			// seen by hostprov-apply.path, which watches only while no
			// apply it started runs: so -d reads the directory again once
			// done, and applies again if a spec changed meanwhile.
			for round := 1; ; round++ {
				if err := applyInputs(c, &sf, &nf, opts, in, false, noWait); err != nil {
					return err
				}
				if appliedDir != nil {
					appliedDir(round)
				}
				applied := sf.fingerprint(in)
				if in, err = sf.read(c); err != nil {
					return err
				}
				if sf.fingerprint(in) == applied {
					return nil
				}
				if round == maxReapplies {
					return failure("%s changed during each of %d applies in a row; the last one applied what it read, and the next apply goes on from there", sf.dir, maxReapplies)
				}
				fmt.Fprintf(c.ErrOrStderr(), "hostprov: %s changed during the apply; applying it again\n", sf.dir)
			}
		},
	}
	sf.register(c)
	nf.register(c)
	nf.registerTimeout(c)
	c.Flags().DurationVar(&nf.fetchWait, "fetch-wait", apply.DefaultFetchWait,
		"how long to keep trying to download a file's source that fails for a reason that may pass (no network yet, a server error), with growing pauses between tries (0: try once)")
	cf.register(c)
	c.Flags().BoolVar(&dryRun, "dry-run", false, "print the plan and change nothing (as plan does)")
	c.Flags().BoolVar(&noWait, "no-wait", false, "fail at once when another apply is running, instead of waiting for it")
	return c
}

// maxReapplies bounds the applies of one apply -d whose directory keeps
// changing under it.
const maxReapplies = 5

// appliedDir, when set, is called after each round of an apply -d, for the
// test that a change made during an apply is applied.
var appliedDir func(round int)

// applyInputs applies the specs read (in), or prints their plan (dryRun).
func applyInputs(c *cobra.Command, sf *specFlags, nf *nodeFlags, opts apply.Options, in []inputs.File, dryRun, noWait bool) error {
	var err error
	opts.SpecDir = sf.specDir()
	var r *pipeline.Result // the pipeline's, once the specs are rendered
	rendered := false
	build := func() error {
		r, err = sf.build(c, in, &opts)
		rendered = true
		if sf.diagnosed {
			// Rendered again every time, so that every
			// apply prints its warnings.
			opts.Inputs = ""
		}
		return err
	}
	if dryRun {
		return planInputs(c, sf, opts, in, nf.output, false)
	}
	// A re-apply of the inputs of the last apply renders
	// nothing: the state and the unit files say all there is
	// to know. Others are rendered before the lock is taken,
	// so that an invalid spec is refused before anything is
	// created on the node.
	opts.Inputs = sf.fingerprint(in)
	if opts.Inputs == "" || apply.RecordedInputs(apply.StatePath(opts.StateDirPath())) != opts.Inputs {
		if err := build(); err != nil {
			return err
		}
	}
	var planned *apply.Plan
	err = runApply(c, nf, opts, noWait, func(ctx context.Context, st *apply.State) (*apply.Plan, error) {
		if !rendered {
			p, ok, err := apply.NewPlanFromState(ctx, st, opts)
			if err != nil || ok {
				return p, err
			}
			if err := build(); err != nil {
				return nil, err
			}
		}
		p, err := apply.NewPlanSets(ctx, r.Sets, st, opts)
		planned = p
		return p, err
	})
	if err == nil && nf.output == outputText && r != nil {
		writeDisruptions(c.ErrOrStderr(), planned, r.Disruptions, true)
	}
	return err
}

// runApply takes the lock, reads the state, makes the plan with makePlan,
// prints it, and carries it out.
func runApply(c *cobra.Command, nf *nodeFlags, opts apply.Options, noWait bool,
	makePlan func(context.Context, *apply.State) (*apply.Plan, error)) error {
	ctx, stop := signalContext(c)
	defer stop()
	stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
	if err := apply.PrepareDirs(opts); err != nil {
		return failure("%v", err)
	}
	unlock, err := apply.Lock(ctx, opts.StateDirPath(), noWait, func(pid int) {
		if pid > 0 {
			fmt.Fprintf(stderr, "hostprov: waiting for another hostprov apply (pid %d) to finish\n", pid)
		} else {
			fmt.Fprintln(stderr, "hostprov: waiting for another hostprov apply to finish")
		}
	})
	if err != nil {
		if ierr := interrupted(ctx, "it was waiting for the lock; "+nothingChanged); ierr != nil {
			return ierr
		}
		return failure("%v", err)
	}
	defer unlock()
	st, err := apply.LoadState(apply.StatePath(opts.StateDirPath()))
	if err != nil {
		return failure("%v", err)
	}
	p, err := makePlan(ctx, st)
	if ierr := interrupted(ctx, nothingChanged); err != nil && ierr != nil {
		return ierr
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err // an invalid spec, already reported
	}
	if err != nil {
		return failure("%v", err)
	}
	if nf.output == outputText {
		if err := p.WriteText(stdout); err != nil {
			return failure("%v", err)
		}
	}
	// A plan without actions needs no systemd: a re-apply of the same
	// spec works even where systemd cannot be reached. One that downloads
	// asks it to bring the network up first.
	var sd apply.Systemd = noSystemd{}
	if (len(p.Actions) > 0 || p.Fetches()) && len(p.Conflicts) == 0 {
		var closeFn func()
		if sd, closeFn, err = nf.systemd(ctx, opts); err != nil {
			if ierr := interrupted(ctx, "it was connecting to systemd; "+nothingChanged); ierr != nil {
				return ierr
			}
			return err
		}
		defer closeFn()
	}
	var logger apply.Logger
	if nf.output == outputText {
		logger = apply.MultiLogger(apply.TextLogger(stderr), apply.JournalLogger())
	} else {
		logger = apply.MultiLogger(apply.JournalLogger())
	}
	res, err := apply.Execute(ctx, p, sd, logger)
	// A signal during the apply: what it left is all there is to say.
	var ierr error
	if err != nil {
		ierr = interrupted(ctx, interruptedApply(c.Name(), res.Events))
	}
	if nf.output == outputJSON {
		out := applyResult{Plan: p.JSON(), Events: res.Events, Counts: res.Counts}
		switch {
		case ierr != nil:
			out.Error = ierr.Error()
		case err != nil:
			out.Error = applyFailed(err, res.Events, false, opts.Root != "")
		}
		if werr := writeJSON(stdout, out); werr != nil && err == nil {
			err = werr
		}
	}
	if ierr != nil {
		return ierr
	}
	if err != nil {
		return failure("%s", applyFailed(err, res.Events, nf.output == outputText, opts.Root != ""))
	}
	if nf.output == outputText {
		fmt.Fprintln(stdout, applied(p))
	}
	return nil
}

// applyFailed is the last message of an apply that failed: what happened
// as a whole and what to do, by cause. Each failed action is in the action
// log with its error; when that went to stderr (logged), the errors are
// not repeated. Systemd refusing a call, or failing a reload or a link, is
// a matter of the machine, whose fix the error's hint names; a unit that
// ran and failed is one of the hook, or of what it needs, which status and
// the unit's journal tell. Offline (--root) no systemd is asked: a link
// that could not be made is a matter of the image's files, and the other
// units went on.
func applyFailed(err error, events []apply.Event, logged, offline bool) string {
	var ran, unfinished, refused, stopped, fetched []apply.Event
	for _, ev := range events {
		if ev.Action != apply.EvFailed {
			continue
		}
		switch apply.ActionKind(ev.Op) {
		case apply.OpDownload:
			fetched = append(fetched, ev)
		case apply.ActStart, apply.ActRestart, apply.ActTryRestart:
			switch {
			case errors.Is(ev.Err, sdbus.ErrJobFailed):
				ran = append(ran, ev)
			case unanswered(ev.Err):
				unfinished = append(unfinished, ev)
			default:
				refused = append(refused, ev)
			}
		default:
			stopped = append(stopped, ev)
		}
	}
	if len(ran)+len(unfinished)+len(refused)+len(stopped)+len(fetched) == 0 {
		// Nothing in the log says it (files, the state, a conflict):
		// the error is the whole message.
		return err.Error()
	}
	var msgs []string
	if len(fetched) > 0 {
		msgs = append(msgs, apply.FetchFailure(fetched, logged))
	}
	say := func(evs []apply.Event, format string, args ...any) {
		var b strings.Builder
		fmt.Fprintf(&b, format, args...)
		if !logged {
			for _, ev := range evs {
				fmt.Fprintf(&b, "\n\t%s %s: %s", ev.Op, ev.Unit, ev.Error)
			}
		}
		msgs = append(msgs, b.String())
	}
	if len(stopped) > 0 && offline {
		say(stopped, "could not %s %s in the image%s; the other units are applied, and all the files are in place and recorded. "+
			"That is a matter of the image's unit files, not of the hooks' commands: do what the error says, then run hostprov apply --root again: it makes the links that are missing",
			stopped[0].Op, strings.Join(unitsOf(stopped), ", "), seeAbove(logged))
	} else if len(stopped) > 0 {
		// Reloads, links and stops come before anything is started:
		// the apply stopped at the first that failed.
		ev := stopped[0]
		what := string(ev.Op) + " " + strings.Join(unitsOf(stopped), ", ")
		if apply.ActionKind(ev.Op) == apply.ActReload {
			what = "reload"
		}
		say(stopped, "apply stopped: systemd could not %s%s; what was done before is recorded. %s, then run hostprov apply again: it goes on from there",
			what, seeAbove(logged), machineAdvice(stopped))
	}
	if len(unfinished) > 0 {
		units := unitsOf(unfinished)
		say(unfinished, "stopped waiting for systemd to %s %s%s; the files and links are in place and recorded. "+
			"Check systemctl status %s, then run hostprov apply again: it retries the units that failed",
			unfinished[0].Op, strings.Join(units, ", "), seeAbove(logged), strings.Join(units, " "))
	}
	if len(refused) > 0 {
		say(refused, "systemd refused to %s %s%s. %s, then run hostprov apply again: it retries the units that failed",
			refused[0].Op, strings.Join(unitsOf(refused), ", "), seeAbove(logged), machineAdvice(refused))
	}
	if len(ran) > 0 {
		units := unitsOf(ran)
		say(ran, "%s failed to start: %s%s; the files and links are in place and recorded. "+
			"See why with hostprov status and journalctl -u %s, fix the hook or what it needs on this machine, "+
			"then run hostprov apply again: it retries the units that failed",
			plural(len(units), "unit"), strings.Join(units, ", "), seeAbove(logged), units[0])
	}
	return strings.Join(msgs, "\n")
}

// unanswered tells whether err is a wait for systemd that ended without
// systemd's answer: the deadline passed, the connection was lost, or
// hostprov gave up.
func unanswered(err error) bool {
	for _, e := range []error{sdbus.ErrNoAnswer, sdbus.ErrJobTimeout, sdbus.ErrConnectionLost, sdbus.ErrGaveUp} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// machineAdvice says what to do about a call systemd refused or could not
// do: what the error's hint says when it has one; otherwise where systemd
// says why.
func machineAdvice(evs []apply.Event) string {
	for _, ev := range evs {
		var se *sdbus.Error
		if errors.As(ev.Err, &se) && se.Hint != "" {
			return "That is a matter of this machine, not of the hooks: do what the error says"
		}
	}
	return "That is a matter of this machine or of systemd, not of the hooks: systemd's own log says why (journalctl -b _PID=1)"
}

func seeAbove(logged bool) string {
	if logged {
		return " (see above)"
	}
	return ""
}

// unitsOf names the units of events once each, in order.
func unitsOf(evs []apply.Event) []string {
	var out []string
	seen := map[string]bool{}
	for _, ev := range evs {
		if !seen[ev.Unit] {
			seen[ev.Unit] = true
			out = append(out, ev.Unit)
		}
	}
	return out
}

// applied is apply's last line.
func applied(p *apply.Plan) string {
	a, c, r := p.Counts()
	if a+c+r == 0 {
		return "Apply complete: no changes."
	}
	return fmt.Sprintf("Apply complete: %d added, %d changed, %d removed.", a, c, r)
}

// noSystemd is the Systemd of a plan without actions; it is never called.
type noSystemd struct{}

var errNoSystemd = errors.New("internal error: a plan without actions asked systemd")

func (noSystemd) Reload(context.Context) error { return errNoSystemd }
func (noSystemd) Enable(context.Context, []string) ([]apply.LinkChange, error) {
	return nil, errNoSystemd
}
func (noSystemd) Disable(context.Context, []string) ([]apply.LinkChange, error) {
	return nil, errNoSystemd
}
func (noSystemd) Mask(context.Context, []string) ([]apply.LinkChange, error) {
	return nil, errNoSystemd
}
func (noSystemd) Unmask(context.Context, []string) ([]apply.LinkChange, error) {
	return nil, errNoSystemd
}
func (noSystemd) Start(context.Context, string) error   { return errNoSystemd }
func (noSystemd) Restart(context.Context, string) error { return errNoSystemd }
func (noSystemd) Stop(context.Context, string) error    { return errNoSystemd }
func (noSystemd) Status(context.Context, string) (apply.UnitStatus, error) {
	return apply.UnitStatus{}, errNoSystemd
}
