package apply

import (
	"fmt"
	"strings"
)

// FileOp is what a plan does to one file.
type FileOp string

// File operations. Keep is a file hostprov wrote that was changed on disk
// since (drift): left alone unless Force.
const (
	OpAdd       FileOp = "add"
	OpChange    FileOp = "change"
	OpRemove    FileOp = "remove"
	OpUnchanged FileOp = "unchanged"
	OpKeep      FileOp = "keep"
)

// FileChange is the plan for one file: a unit file or drop-in.
type FileChange struct {
	Unit string `json:"unit"`
	// Path is the file's path on the node ("/etc/systemd/system/a.service").
	Path string `json:"path"`
	Op   FileOp `json:"op"`
	// Reason says why: "new", "content changed", "adopted (--adopt)", ...
	Reason string `json:"reason,omitempty"`
	// OldSHA256 is the hash of the file on disk, NewSHA256 of what the plan
	// writes.
	OldSHA256 string `json:"oldSha256,omitempty"`
	NewSHA256 string `json:"newSha256,omitempty"`
	// OldLink is set when a symbolic link is at the path (to this target).
	OldLink string `json:"oldLink,omitempty"`
	// Drift is set when the file on disk is not what hostprov wrote.
	Drift bool `json:"drift,omitempty"`
	// Stamp marks the stamp of a command hook that runs once (in
	// /var/lib/hostprov/stamps; see plan_stamps.go), which the plan removes:
	// not a unit file, so no reload or restart follows from it.
	Stamp bool `json:"stamp,omitempty"`
	// Old and New are the bytes, for the diff.
	Old []byte `json:"-"`
	New []byte `json:"-"`

	// Hook, Kind, Mode, Owner ("UID:GID"), Target and Source are set for
	// a file, directory or link a hook places outside the unit directory
	// (Kind is empty for unit files, drop-ins and stamps). The content of
	// a file with a Source is not known before Execute downloads it.
	Hook   string   `json:"hook,omitempty"`
	Kind   PathKind `json:"kind,omitempty"`
	Mode   string   `json:"mode,omitempty"`
	Owner  string   `json:"owner,omitempty"`
	Target string   `json:"target,omitempty"`
	Source string   `json:"source,omitempty"`

	rel    string      // the path relative to the unit dir
	oldIno uint64      // the inode of the file on disk
	path   *pathChange // for a path outside the unit dir
	// parentDir marks a directory made for a path below it.
	parentDir bool
}

// changes reports whether the operation changes the disk.
func (f *FileChange) changes() bool {
	return f.Op == OpAdd || f.Op == OpChange || f.Op == OpRemove
}

// changesUnit reports whether the operation changes a file systemd reads:
// a unit file or drop-in, not a stamp nor a path outside the unit dir.
func (f *FileChange) changesUnit() bool { return f.changes() && !f.Stamp && f.Kind == "" }

// ActionKind is a systemd action.
type ActionKind string

// Actions, in the order a plan runs them: stops, disables and unmasks
// before files change (disable reads the [Install] of the file it undoes;
// a mask link holds the place of a unit file); masks and enables after;
// then one reload for every file and link changed; then starts and
// restarts, which need the reloaded definitions. TryRestart restarts a unit
// only if it is running: for drop-ins on a unit hostprov did not install.
const (
	ActStop       ActionKind = "stop"
	ActDisable    ActionKind = "disable"
	ActUnmask     ActionKind = "unmask"
	ActMask       ActionKind = "mask"
	ActEnable     ActionKind = "enable"
	ActReload     ActionKind = "reload"
	ActStart      ActionKind = "start"
	ActRestart    ActionKind = "restart"
	ActTryRestart ActionKind = "try-restart"
)

// phase orders action kinds; files change between phases 1 and 2.
func (k ActionKind) phase() int {
	switch k {
	case ActStop:
		return 0
	case ActDisable, ActUnmask:
		return 1
	case ActMask, ActEnable:
		return 2
	case ActReload:
		return 3
	}
	return 4
}

// Action is one systemd action of a plan.
type Action struct {
	Kind ActionKind `json:"action"`
	// Unit is the unit acted on: for start, stop and restart of a
	// template, its DefaultInstance. Empty for reload.
	Unit   string `json:"unit,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Problem is a conflict (the plan cannot be applied) or a warning, about a
// unit and maybe one of its files.
type Problem struct {
	Unit    string `json:"unit"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
	// Fix, when set, says what can be done about it (see Fix.Text).
	Fix *Fix `json:"fix,omitempty"`
}

// String is the problem as the CLI says it: with hostprov apply's flags.
func (p Problem) String() string { return p.Text(true) }

// UnitChange says what the plan does to a unit as a whole.
type UnitChange struct {
	Unit string `json:"unit"`
	Hook string `json:"hook,omitempty"`
	// Change is "add" (a unit hostprov did not own), "change", "remove"
	// (pruned) or "none".
	Change string `json:"change"`
}

// Plan is what apply will do, as data: the file operations, the systemd
// actions in the order they run, and the problems found. It is made by
// NewPlan, printed by WriteText or as JSON, and carried out by Execute.
type Plan struct {
	Units     []UnitChange `json:"units"`
	Files     []FileChange `json:"files"`
	Actions   []Action     `json:"actions"`
	Warnings  []Problem    `json:"warnings,omitempty"`
	Conflicts []Problem    `json:"conflicts,omitempty"`
	// Accounts are the users and groups of the spec, and what the plan
	// does about each (see Account).
	Accounts []AccountChange `json:"accounts,omitempty"`

	// sysusers are the sysusers.d files systemd-sysusers runs on.
	sysusers []string

	opts  Options
	state *State // as read
	next  *State // after a successful apply
	// replan makes the plan again, from the same inputs and the disk as
	// it is then, with opts.hold set to hold; nil for the plans that
	// download nothing (NewRemovePlan, NewPlanFromState).
	replan func(hold map[hookKey]bool) (*Plan, error)
}

// Counts returns the number of units the plan adds, changes and removes.
// Units are counted, not files or actions, as Terraform counts resources:
// a unit with a new drop-in and a restart is one change.
func (p *Plan) Counts() (add, change, remove int) {
	for _, u := range p.Units {
		switch u.Change {
		case "add":
			add++
		case "change":
			change++
		case "remove":
			remove++
		}
	}
	// An account made, or a user added to groups, is one resource.
	for _, ac := range p.Accounts {
		switch ac.Op {
		case OpAdd:
			add++
		case OpChange:
			change++
		}
	}
	// A file, directory or link a hook places counts as one resource.
	for i := range p.Files {
		f := &p.Files[i]
		if f.Kind == "" || !f.changes() || f.parentDir {
			continue // a parent directory goes with what is in it
		}
		switch f.Op {
		case OpAdd:
			add++
		case OpChange:
			change++
		case OpRemove:
			remove++
		}
	}
	return
}

// changesFiles reports whether the plan writes or removes a file.
func (p *Plan) changesFiles() bool {
	for i := range p.Files {
		if p.Files[i].changes() {
			return true
		}
	}
	return false
}

// HasChanges reports whether applying the plan would change anything.
func (p *Plan) HasChanges() bool {
	a, c, r := p.Counts()
	return a+c+r > 0
}

// Summary is the plan's last line: "Plan: 2 to add, 1 to change, 1 to
// remove." or "No changes.".
func (p *Plan) Summary() string {
	a, c, r := p.Counts()
	if a+c+r == 0 {
		return "No changes."
	}
	return fmt.Sprintf("Plan: %d to add, %d to change, %d to remove.", a, c, r)
}

// OpDownload is the Op of the failed event of a file whose source could
// not be downloaded, or did not have its hash.
const OpDownload = "download"

// fetches reports whether Execute downloads the file's source.
func (f *FileChange) fetches() bool {
	return f.Kind == KindFile && f.Source != "" && f.New == nil && (f.Op == OpAdd || f.Op == OpChange)
}

// Fetches tells whether the plan downloads the source of a file over the
// network, and so asks systemd to start network-online.target first (see
// fetchSources).
func (p *Plan) Fetches() bool {
	for i := range p.Files {
		if f := &p.Files[i]; f.fetches() && overNetwork(f.Source) {
			return true
		}
	}
	return false
}

func overNetwork(source string) bool {
	return strings.HasPrefix(source, "http://") || strings.HasPrefix(source, "https://")
}
