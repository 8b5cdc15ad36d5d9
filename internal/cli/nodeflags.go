package cli

import (
	"context"
	"net/http"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/hostprov/hostprov/internal/sdbus"
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
	registerOutput(c, &f.output)
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
