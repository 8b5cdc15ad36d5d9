package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/hostprov/hostprov/internal/inputs"
	"github.com/hostprov/hostprov/internal/pipeline"
	"github.com/hostprov/hostprov/internal/sdbus"
	"github.com/hostprov/hostprov/internal/suggest"
	"github.com/hostprov/hostprov/pkg/apply"
)

// callTimeout bounds connecting to systemd and each call that it answers
// at once. Tests shorten it.
var callTimeout = sdbus.DefaultCallTimeout

// connectSystemd reaches the node's systemd over its private D-Bus socket;
// jobTimeout bounds each job wait and daemon-reload (0: none). Tests
// replace it with a fake.
var connectSystemd = func(ctx context.Context, socket string, jobTimeout time.Duration) (apply.Systemd, func(), error) {
	m, err := sdbus.DialTimeout(ctx, socket, callTimeout)
	if err != nil {
		return nil, nil, err
	}
	m.JobTimeout = jobTimeout
	return m, m.Close, nil
}

// Output formats of plan, apply, remove and status.
const (
	outputText = "text"
	outputJSON = "json"
)

// nodeFlags are the flags of the commands that work on a node: where its
// units and state are, how to reach its systemd and how long to wait for
// it, how to print.
type nodeFlags struct {
	root       string
	unitDir    string
	stateDir   string
	socket     string
	output     string
	jobTimeout time.Duration // apply and remove only: --timeout
	fetchWait  time.Duration // apply only: --fetch-wait
}

func (f *nodeFlags) register(c *cobra.Command) {
	c.Flags().StringVar(&f.root, "root", "", "work offline on a node's file system mounted at `DIR`: files and enable links only, no systemd")
	c.Flags().StringVar(&f.unitDir, "unit-dir", apply.DefaultUnitDir, "unit directory (inside --root when given)")
	c.Flags().StringVar(&f.stateDir, "state-dir", apply.DefaultStateDir, "directory of hostprov's state and lock (inside --root when given)")
	c.Flags().StringVar(&f.socket, "systemd-socket", "/run/systemd/private", "systemd's private D-Bus socket")
	c.Flags().StringVarP(&f.output, "output", "o", outputText, "output format: text or json")
	c.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{outputText, outputJSON}, cobra.ShellCompDirectiveNoFileComp))
}

// registerTimeout adds --timeout, for the commands that run jobs.
func (f *nodeFlags) registerTimeout(c *cobra.Command) {
	c.Flags().DurationVar(&f.jobTimeout, "timeout", sdbus.DefaultJobTimeout,
		"how long to wait for each start, restart or stop job and for a daemon-reload (0: as long as systemd works on it)")
}

// fetchClient downloads the sources of files when set; nil is apply's
// default client. Tests set it to trust their own server.
var fetchClient *http.Client

// options checks the flags and returns apply's options.
func (f *nodeFlags) options() (apply.Options, error) {
	if f.output != outputText && f.output != outputJSON {
		return apply.Options{}, invalid("unknown --output %q: use text or json", f.output)
	}
	if f.jobTimeout < 0 {
		return apply.Options{}, invalid("--timeout %v: give a duration of 0 or more, such as 30m (0 waits as long as systemd works on a job)", f.jobTimeout)
	}
	if f.fetchWait < 0 {
		return apply.Options{}, invalid("--fetch-wait %v: give a duration of 0 or more, such as 5m (0 tries each download once)", f.fetchWait)
	}
	o := apply.Options{UnitDir: f.unitDir, StateDir: f.stateDir, FetchWait: f.fetchWait, HTTPClient: fetchClient}
	if f.fetchWait == 0 {
		o.FetchWait = -1 // apply.Options: one try
	}
	if f.root != "" {
		root, err := filepath.Abs(f.root)
		if err != nil {
			return o, failure("%v", err)
		}
		o.Root, o.Offline = root, true
		// Inside the root, paths are as the node sees them.
		o.UnitDir = filepath.Join("/", f.unitDir)
		o.StateDir = filepath.Join("/", f.stateDir)
		return o, nil
	}
	for _, p := range []*string{&o.UnitDir, &o.StateDir} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return o, failure("%v", err)
		}
		*p = abs
	}
	return o, nil
}

// systemd returns the Systemd to act through: the offline one with --root,
// the node's manager otherwise.
func (f *nodeFlags) systemd(ctx context.Context, opts apply.Options) (apply.Systemd, func(), error) {
	if opts.Root != "" {
		return apply.NewOffline(opts.Root, opts.UnitDir), func() {}, nil
	}
	sd, closeFn, err := connectSystemd(ctx, f.socket, f.jobTimeout)
	if err != nil {
		return nil, nil, failure("%v", err)
	}
	return sd, closeFn, nil
}

// changeFlags are the flags that shape a plan.
type changeFlags struct {
	noPrune, noStart, adopt, force bool
}

func (f *changeFlags) register(c *cobra.Command) {
	c.Flags().BoolVar(&f.noPrune, "no-prune", false, "keep the units of earlier applies that the spec no longer has")
	c.Flags().BoolVar(&f.noStart, "no-start", false, "do not start or restart units: files and links only")
	c.Flags().BoolVar(&f.adopt, "adopt", false, "take over unit files hostprov did not write that the spec would overwrite in the unit directory (never a unit the node has elsewhere, such as in /usr/lib/systemd/system)")
	c.Flags().BoolVar(&f.force, "force", false, "overwrite files hostprov wrote that were edited since")
}

func (f *changeFlags) apply(o *apply.Options) {
	o.NoPrune, o.NoStart, o.Adopt, o.Force = f.noPrune, f.noStart, f.adopt, f.force
}

// interrupt is the cause of a context that a signal ended.
type interrupt struct{ sig syscall.Signal }

func (i interrupt) Error() string {
	switch i.sig {
	case syscall.SIGINT:
		return "interrupted by SIGINT"
	case syscall.SIGTERM:
		return "interrupted by SIGTERM"
	}
	return "interrupted by " + i.sig.String()
}

// signalContext ends when the process gets SIGINT (^C) or SIGTERM (systemd
// stopping the unit that runs hostprov, a shutdown, a fleet tool's
// timeout), with an interrupt as its cause, so that every wait (for the
// lock, for systemd, for a job) ends and the command can say what it left
// behind. A second signal ends the process at once, as if hostprov had no
// handler: no wait can keep it then, and every file it writes is replaced
// by rename, so even that leaves each file old or new.
func signalContext(c *cobra.Command) (context.Context, func()) {
	parent := c.Context()
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	stopped := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			signal.Stop(sigs)
			cancel(interrupt{s.(syscall.Signal)})
		case <-stopped:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(stopped)
		cancel(nil)
	}
}

// interrupted returns the error of a command that a signal ended, saying
// what it left behind, or nil if no signal ended ctx. Its exit code is
// 128 plus the signal's number, as a shell reports a command that the
// signal killed: 130 for SIGINT, 143 for SIGTERM.
func interrupted(ctx context.Context, left string) error {
	var i interrupt
	if !errors.As(context.Cause(ctx), &i) {
		return nil
	}
	return &exitError{code: 128 + int(i.sig), msg: i.Error() + ": " + left}
}

// nothingChanged is what an apply interrupted before it changed anything
// left behind.
const nothingChanged = "nothing was changed"

// interruptedApply says what an apply or remove (the command named cmd)
// that a signal ended while it carried out its plan left behind, from its
// events.
func interruptedApply(cmd string, events []apply.Event) string {
	var ops, units []string
	for _, ev := range events {
		if ev.Action == apply.EvFailed && errors.Is(ev.Err, sdbus.ErrGaveUp) {
			ops = append(ops, ev.Op)
			units = append(units, ev.Unit)
		}
	}
	msg := "hostprov " + cmd + " stopped where it was: each file it touched is whole, in its old or its new " +
		"version, and its state says which"
	if len(units) > 0 {
		what := "job"
		if slices.Equal(ops, slices.Repeat(ops[:1], len(ops))) {
			what = ops[0]
		}
		verb := "goes"
		if len(units) > 1 {
			what, verb = what+"s", "go"
		}
		msg += fmt.Sprintf("; the %s of %s %s on in systemd: check systemctl status %s",
			what, strings.Join(units, ", "), verb, strings.Join(units, " "))
	}
	return msg + ". Run hostprov " + cmd + " again to finish: it goes on from there"
}

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
				opts, err := nf.options()
				if err != nil {
					return err
				}
				cf.apply(&opts)
				in, err := sf.read(c)
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
			opts, err := nf.options()
			if err != nil {
				return err
			}
			cf.apply(&opts)
			in, err := sf.read(c)
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

func newRemove() *cobra.Command {
	var (
		nf     nodeFlags
		all    bool
		dryRun bool
		noWait bool
		force  bool
	)
	c := &cobra.Command{
		Use:   "remove NAME... | --all [--dry-run] [--force] [--no-wait] [--timeout DURATION]",
		Short: "Stop, disable and delete units hostprov installed",
		Long: `Remove stops, disables and deletes the units hostprov installed for the named hooks
(or units), with their drop-ins and enable links, and reloads systemd once. With --all
it removes every unit hostprov owns on this node. Files edited since hostprov wrote
them are left alone unless --force. hostprov status lists the hooks installed.

A name hostprov did not install is invalid input (exit code 2), and then nothing is
removed. With --dry-run it prints the remove plan and changes nothing.

Each stop job and the daemon-reload may take --timeout (10m; 0: as long as systemd
works on it), each other call to systemd 30s. SIGTERM or SIGINT stops a remove where it
is, as it stops an apply (see hostprov apply --help), with exit code 143 or 130.`,
		RunE: func(c *cobra.Command, args []string) error {
			switch {
			case all && len(args) > 0:
				return invalid("give the hooks to remove or --all, not both")
			case !all && len(args) == 0:
				return invalid("name the hooks to remove (hostprov status lists them), or --all")
			}
			opts, err := nf.options()
			if err != nil {
				return err
			}
			opts.Force = force
			makePlan := func(ctx context.Context, st *apply.State) (*apply.Plan, error) {
				names := args
				if all {
					names = nil
					for _, u := range st.Units {
						names = append(names, u.Name)
					}
					// Hooks with files but no unit.
					for _, h := range pathHooks(st) {
						names = append(names, h)
					}
				} else if err := checkInstalled(names, st); err != nil {
					return nil, err
				}
				return apply.NewRemovePlan(ctx, names, st, opts)
			}
			if dryRun {
				return showPlan(c, opts, nf.output, false, makePlan)
			}
			return runApply(c, &nf, opts, noWait, makePlan)
		},
	}
	nf.register(c)
	nf.registerTimeout(c)
	c.Flags().BoolVar(&all, "all", false, "remove every unit hostprov installed")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "print the remove plan and change nothing")
	c.Flags().BoolVar(&noWait, "no-wait", false, "fail at once when another apply is running, instead of waiting for it")
	c.Flags().BoolVar(&force, "force", false, "remove files hostprov wrote even if they were edited since")
	return c
}

// maxListed is how many installed hooks an error names, so that a node with
// many keeps its hint on one line.
const maxListed = 10

// checkInstalled makes sure that every name is a hook or unit hostprov
// installed. An unknown name is invalid input, told before anything is
// done, so that a typo removes nothing; the hint lists the installed hooks,
// the nearest to the first unknown name first.
func checkInstalled(names []string, st *apply.State) error {
	var unknown []string
	for _, n := range names {
		found := false
		for _, u := range st.Units {
			if u.Name == n || u.Hook == n {
				found = true
				break
			}
		}
		if !found && !slices.Contains(pathHooks(st), n) {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	what := fmt.Sprintf("no hook or unit named %s is installed here", strings.Join(unknown, ", "))
	if len(unknown) > 1 {
		what = fmt.Sprintf("no hooks or units named %s are installed here", strings.Join(unknown, ", "))
	}
	if len(st.Units) == 0 {
		return invalid("%s: hostprov has installed nothing on this node; nothing was removed", what)
	}
	// A hook is named by its hook name; a unit without one (from an
	// older state) by its unit name. Either is accepted.
	type installed struct{ name, unit string }
	var hooks []installed
	var known []string
	for _, u := range st.Units {
		h := installed{name: u.Hook, unit: u.Name}
		if h.name == "" {
			h.name = u.Name
		}
		hooks = append(hooks, h)
		known = append(known, h.name)
	}
	dist := func(h installed) int {
		return min(suggest.Distance(unknown[0], h.name), suggest.Distance(unknown[0], h.unit))
	}
	sort.SliceStable(hooks, func(i, j int) bool { return dist(hooks[i]) < dist(hooks[j]) })
	var list []string
	for _, h := range hooks[:min(len(hooks), maxListed)] {
		list = append(list, h.name)
	}
	hint := "installed: " + strings.Join(list, ", ")
	if more := len(hooks) - maxListed; more > 0 {
		hint += fmt.Sprintf(" and %d more (hostprov status lists them)", more)
	}
	if m := suggest.Closest(unknown[0], known); m != "" {
		hint = "did you mean " + m + "? " + hint
	}
	return invalid("%s; nothing was removed\n\thint: %s", what, hint)
}

// pathHooks are the hooks of the files, directories and links the state
// records.
func pathHooks(st *apply.State) []string {
	var hs []string
	for _, p := range st.Paths {
		if p.Hook != "" && !slices.Contains(hs, p.Hook) {
			hs = append(hs, p.Hook)
		}
	}
	return hs
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
