package apply

import (
	"net/http"
	"path"
	"path/filepath"
	"time"
)

// Defaults of Options.
const (
	DefaultUnitDir  = "/etc/systemd/system"
	DefaultStateDir = "/var/lib/hostprov"
)

// Options say where the units go and how far apply may go.
type Options struct {
	// Root, when set, is the directory a node's root file system is
	// mounted on (--root): UnitDir and StateDir are inside it.
	Root string
	// Offline plans for the offline Systemd (hostprov --root): files and
	// enable, disable, mask and unmask links only, as no manager runs in
	// an image to reload, start, restart or stop units (its enabled units
	// start when it boots). Plan then lists exactly what apply does.
	Offline bool
	// UnitDir is the unit directory as the node sees it; default
	// DefaultUnitDir. StateDir holds the state and the lock; default
	// DefaultStateDir.
	UnitDir  string
	StateDir string
	// NoPrune keeps the units of an earlier apply that the spec no longer
	// has, instead of stopping, disabling and deleting them.
	NoPrune bool
	// NoStart plans no start, restart or try-restart: files and links
	// only. Stops are still planned.
	NoStart bool
	// Adopt takes over files hostprov did not write that the spec would
	// overwrite; without it they are conflicts. It never takes over a
	// unit the node has elsewhere in its unit search path (see shadows):
	// that is the node's unit, not a stray file.
	Adopt bool
	// Force overwrites (or removes) files hostprov wrote that were changed
	// on disk since; without it they are left alone and reported.
	Force bool
	// SpecDir is the directory the spec sets of NewPlanSets were read
	// from (hostprov apply -d): the units of a set last applied from a
	// file in it that is not among the sets are pruned, since its file is
	// gone. Empty when the sets were named one by one.
	SpecDir string
	// Inputs, when set, is a fingerprint of everything the desired units
	// are made from: the spec's bytes, the flags that shape rendering, the
	// build of the renderer. An apply that finishes records it in the
	// state, and NewPlanFromState plans a re-apply of the same inputs
	// without the units. It must change whenever the units could.
	Inputs string
	// Paths are the files, directories and links of the spec's hooks
	// (NewPlan; NewPlanSets takes them from each SpecSet).
	Paths []Path
	// Accounts are the users and groups of the spec's hooks (NewPlan;
	// NewPlanSets takes them from each SpecSet).
	Accounts []Account
	// Tools, when set, runs the node's own systemd-sysusers and chpasswd
	// for the users and groups of the spec, with node paths and no
	// --root (an agent whose container sees the node at Root asks the
	// node's systemd to run them); nil runs this machine's, with --root
	// when Root is set.
	Tools Tools
	// HTTPClient downloads the sources of files; nil is a client that
	// gives the download of one file downloadTimeout (five minutes).
	HTTPClient *http.Client
	// FetchWait bounds how long apply keeps trying to download a file's
	// source that fails for a reason that may pass (no network yet, a
	// server error), counting from the first try; zero is
	// DefaultFetchWait, and a negative value tries once.
	FetchWait time.Duration

	// hold are the hooks the plan keeps as they are (see held): their
	// units and paths are neither planned nor pruned, and what the state
	// records of them is carried over. Execute re-plans with the hooks
	// whose files could not be downloaded held.
	hold map[hookKey]bool
	// node, when set, is the node a plan reads instead of the one on
	// this machine: the planner's tests plan against a node in memory.
	node nodeView
}

// hookKey names a hook of a spec set ("" for a plan of one spec).
type hookKey struct{ set, hook string }

// held reports whether the hook named hook of the spec set set is held. A
// unit or path recorded before spec sets (no set) is held when a hook of
// that name is, in any set.
func (o Options) held(set, hook string) bool {
	if len(o.hold) == 0 || hook == "" {
		return false
	}
	if o.hold[hookKey{set, hook}] {
		return true
	}
	if set == "" {
		for k := range o.hold {
			if k.hook == hook {
				return true
			}
		}
	}
	return false
}

func (o Options) fetchWait() time.Duration {
	if o.FetchWait == 0 {
		return DefaultFetchWait
	}
	return max(o.FetchWait, 0)
}

// downloadTimeout is how long the download of one file's source may take
// with the default client.
const downloadTimeout = 5 * time.Minute

func (o *Options) defaults() {
	if o.UnitDir == "" {
		o.UnitDir = DefaultUnitDir
	}
	if o.StateDir == "" {
		o.StateDir = DefaultStateDir
	}
}

// UnitDirPath and StateDirPath are the directories on this machine: under
// Root when it is set.
func (o Options) UnitDirPath() string { return filepath.Join(o.Root, o.unitDir()) }

func (o Options) StateDirPath() string { return filepath.Join(o.Root, o.stateDir()) }

// manages tells whether the plan starts, restarts and try-restarts units:
// not with NoStart, and not Offline, where no manager runs.
func (o Options) manages() bool { return !o.NoStart && !o.Offline }

func (o Options) unitDir() string { return orDefault(o.UnitDir, DefaultUnitDir) }

func (o Options) stateDir() string { return orDefault(o.StateDir, DefaultStateDir) }

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// nodePath is where a file of the unit dir is as the node sees it: the path
// shown in plans and logs, the same with or without --root.
func (o Options) nodePath(rel string) string { return path.Join(o.unitDir(), rel) }
