package apply

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hostprov/hostprov/internal/fsutil"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/units"
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
	// HookNames[i] is the name of hook i of the spec (compile.Unit.Hook),
	// recorded in the state and shown by status, for units built without
	// compile.Unit.HookName.
	HookNames []string
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
	// HTTPClient downloads the sources of files; nil is a client with
	// DownloadTimeout.
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

// DownloadTimeout is how long the download of one file's source may take
// with the default client.
const DownloadTimeout = 5 * time.Minute

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
func (o Options) UnitDirPath() string  { return filepath.Join(o.Root, o.unitDir()) }
func (o Options) StateDirPath() string { return filepath.Join(o.Root, o.stateDir()) }

// manages tells whether the plan starts, restarts and try-restarts units:
// not with NoStart, and not Offline, where no manager runs.
func (o Options) manages() bool { return !o.NoStart && !o.Offline }

func (o Options) unitDir() string  { return orDefault(o.UnitDir, DefaultUnitDir) }
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
	// /var/lib/hostprov/stamps; see stamps.go), which the plan removes:
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

// NewPlan compares the desired units with the state and the unit directory
// and returns the plan that makes the node match the spec. It reads files
// and never changes anything. Conflicts (a file hostprov did not write in
// the way, a symlinked drop-in directory) are in Plan.Conflicts, and
// Execute refuses a plan that has any; an error is returned only when the
// plan cannot be made at all (unreadable files, invalid names, a state for
// another unit directory).
func NewPlan(ctx context.Context, desired []compile.Unit, st *State, opts Options) (*Plan, error) {
	p, err := newSpecPlan(ctx, desired, st, opts)
	if err == nil {
		p.replan = func(hold map[hookKey]bool) (*Plan, error) {
			opts.hold = hold
			return newSpecPlan(ctx, desired, st, opts)
		}
	}
	return p, err
}

func newSpecPlan(ctx context.Context, desired []compile.Unit, st *State, opts Options) (*Plan, error) {
	seen := map[string]bool{}
	for _, u := range desired {
		if err := checkDesired(u, seen); err != nil {
			return nil, err
		}
	}
	return newPlan(ctx, desired, st, opts, rules{prune: func(su *StateUnit) string {
		if opts.NoPrune || seen[su.Name] {
			return ""
		}
		return "removed from the spec"
	}, prunePath: func(*PathState) string {
		if opts.NoPrune {
			return ""
		}
		return "removed from the spec"
	}, paths: opts.Paths, accounts: opts.Accounts})
}

// checkDesired refuses a unit whose name or drop-in names would leave the
// unit directory, or that seen holds already, and adds it to seen.
func checkDesired(u compile.Unit, seen map[string]bool) error {
	if err := checkUnitName(u.Name); err != nil {
		return err
	}
	if seen[u.Name] {
		return fmt.Errorf("unit %s is in the spec twice", u.Name)
	}
	seen[u.Name] = true
	for _, d := range u.Dropins {
		if err := checkDropinName(d.Name); err != nil {
			return fmt.Errorf("unit %s: %v", u.Name, err)
		}
	}
	return nil
}

// rules say what a plan does with the units of the state that it does not
// desire, and what it records of those it does.
type rules struct {
	// prune gives the reason to remove a unit of the state that is not
	// desired (the action log's "why"), or "" to keep it as it is.
	prune func(*StateUnit) string
	// others reports a kept unit of another spec set: keeping it does
	// not make the state's units any other than those of the inputs.
	others func(*StateUnit) bool
	// meta holds, by desired unit, its Set and Where.
	meta map[string]StateUnit
	// paths are the desired files, directories and links, and prunePath
	// gives the reason to remove a path of the state the spec does not
	// have, or "" to keep it.
	paths     []Path
	prunePath func(*PathState) string
	// accounts are the desired users and groups.
	accounts []Account
	// otherSet reports a spec set that is not among those applied.
	otherSet func(string) bool
	// owners are the owners of the sets applied (SpecSet.Owner), recorded
	// in the next state.
	owners map[string]string
}

// NewRemovePlan plans removing the owned units with the given unit or hook
// names (hostprov remove): stop, disable, delete their files, reload. Other
// units are left as they are. A name hostprov does not own is an error.
func NewRemovePlan(ctx context.Context, names []string, st *State, opts Options) (*Plan, error) {
	want := map[string]bool{}
	for _, n := range names {
		found := false
		for _, u := range st.Units {
			if u.Name == n || u.Hook == n {
				want[u.Name] = true
				found = true
			}
		}
		for _, sp := range st.Paths {
			found = found || sp.Hook == n
		}
		if !found {
			var owned []string
			for _, u := range st.Units {
				owned = append(owned, u.Name)
			}
			if len(owned) == 0 {
				return nil, fmt.Errorf("%s: hostprov owns no unit on this node", n)
			}
			return nil, fmt.Errorf("%s: not a unit or hook hostprov installed; it owns %s", n, strings.Join(owned, ", "))
		}
	}
	hooks := map[string]bool{}
	for _, u := range st.Units {
		if want[u.Name] && u.Hook != "" {
			hooks[u.Hook] = true
		}
	}
	for _, n := range names {
		hooks[n] = true
	}
	return newPlan(ctx, nil, st, opts, rules{prune: func(su *StateUnit) string {
		if !want[su.Name] {
			return ""
		}
		return "removed by hostprov remove"
	}, prunePath: func(sp *PathState) string {
		if !hooks[sp.Hook] {
			return ""
		}
		return "removed by hostprov remove"
	}})
}

// planner carries a plan being made.
type planner struct {
	*Plan
	dir *fsutil.Dir // the unit dir on this machine; nil while it does not exist
	// keepStamps are the stamps that the node's unit files name after
	// the apply (node paths); stamps is the stamp directory, read once.
	keepStamps map[string]bool
	stamps     *stampDir
	// desired are the desired units by name.
	desired map[string]*compile.Unit
	// rewritten are the files of hooks the plan writes (node paths).
	rewritten map[string]bool
	// otherSet is rules.otherSet.
	otherSet func(string) bool
	// nodeUnits indexes the node's unit search path (see shadows); read
	// once a plan writes a unit file that hostprov does not own yet.
	nodeUnits map[string][]nodeEntry
}

// newPlan plans the desired units and, of the state's other units, removes
// those for which r.prune gives a reason (the action log's "why"), keeping
// the others as they are.
func newPlan(_ context.Context, desired []compile.Unit, st *State, opts Options, r rules) (*Plan, error) {
	opts.defaults()
	if st == nil {
		st = &State{Version: StateVersion}
	}
	if len(opts.hold) > 0 {
		desired, r = holdHooks(desired, st, opts, r)
	}
	prune := r.prune
	if st.UnitDir != "" && st.UnitDir != opts.UnitDir {
		return nil, fmt.Errorf("the state in %s records units in %s, not in %s: give --unit-dir %s, or another --state-dir for another unit directory",
			StatePath(opts.stateDir()), st.UnitDir, opts.UnitDir, st.UnitDir)
	}
	dir, err := openUnitDir(opts)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	p := &planner{
		Plan: &Plan{opts: opts, state: st, Files: []FileChange{}, Actions: []Action{}, Units: []UnitChange{},
			Warnings: Permissions(opts)},
		dir: dir,
	}
	next := &State{Version: StateVersion, UnitDir: opts.UnitDir}
	inSpec := map[string]bool{}
	p.desired = map[string]*compile.Unit{}
	for i := range desired {
		inSpec[desired[i].Name] = true
		p.desired[desired[i].Name] = &desired[i]
	}
	// No stamp that a unit file names after the apply is removed, even
	// one whose name another unit's stamps share (stamp names keep only
	// the plain characters of a unit name).
	p.keepStamps = map[string]bool{}
	for i := range desired {
		if s := stampOf(desired[i].Contents); s != "" && !desired[i].Mask {
			p.keepStamps[s] = true
		}
	}
	for _, prev := range st.Units {
		if !inSpec[prev.Name] && prune(prev) == "" {
			if s := stampOf(p.current(prev.Name)); s != "" {
				p.keepStamps[s] = true
			}
		}
	}
	for i := range desired {
		su, err := p.unit(&desired[i])
		if err != nil {
			return nil, err
		}
		if m, ok := r.meta[su.Name]; ok {
			su.Set, su.Where = m.Set, m.Where
		}
		next.Units = append(next.Units, su)
	}
	// The state's units are the inputs' only when none of another spec
	// stays; a remove plan (no desired units) leaves none recorded.
	// A held hook is not as the inputs say: the next apply renders
	// them again, and so tries the hook again.
	if desired != nil && len(opts.hold) == 0 {
		next.Inputs = opts.Inputs
	}
	for _, prev := range st.Units {
		if inSpec[prev.Name] {
			continue
		}
		why := prune(prev)
		if why == "" {
			next.Units = append(next.Units, prev.clone1())
			if r.others == nil || !r.others(prev) {
				next.Inputs = ""
			}
			continue
		}
		su, err := p.remove(prev, why)
		if err != nil {
			return nil, err
		}
		if su != nil {
			next.Units = append(next.Units, su)
		}
	}
	prunePath := r.prunePath
	if prunePath == nil {
		prunePath = func(*PathState) string { return "" }
	}
	p.otherSet = r.otherSet
	if err := p.planPaths(r.paths, r.accounts, next, prunePath); err != nil {
		return nil, err
	}
	// The owners the state records, and those of the sets applied; the
	// records of sets left with nothing go (usedSets).
	for _, rec := range st.Sets {
		next.Sets = append(next.Sets, &SetState{Name: rec.Name, Owner: rec.Owner})
	}
	for set, owner := range r.owners {
		next.recordOwner(set, owner)
	}
	next.Sets = next.usedSets()
	p.finish()
	p.next = next
	return p.Plan, nil
}

// holdHooks takes the units and paths of the hooks opts holds out of
// desired and r.paths, and makes r keep (not prune) what the state records
// of them and the directories hostprov made for their paths: the plan then
// does nothing to a held hook, and the next state carries it over as the
// last apply left it, so that an apply once the hook can be applied again
// goes on from there.
func holdHooks(desired []compile.Unit, st *State, opts Options, r rules) ([]compile.Unit, rules) {
	heldUnits := map[string]bool{}
	var kept []compile.Unit
	for _, u := range desired {
		hook := u.HookName
		if hook == "" && u.Hook >= 0 && u.Hook < len(opts.HookNames) {
			hook = opts.HookNames[u.Hook]
		}
		if opts.held(r.meta[u.Name].Set, hook) {
			heldUnits[u.Name] = true
			continue
		}
		kept = append(kept, u)
	}
	if kept == nil && desired != nil {
		kept = []compile.Unit{}
	}
	heldPaths := map[string]bool{}
	var paths []Path
	for _, p := range r.paths {
		if opts.held(p.set, p.Hook) {
			heldPaths[p.Path] = true
			continue
		}
		paths = append(paths, p)
	}
	for _, sp := range st.Paths {
		if opts.held(sp.Set, sp.Hook) {
			heldPaths[sp.Path] = true
		}
	}
	prune, prunePath := r.prune, r.prunePath
	r.prune = func(su *StateUnit) string {
		if heldUnits[su.Name] || opts.held(su.Set, su.Hook) {
			return ""
		}
		return prune(su)
	}
	r.prunePath = func(sp *PathState) string {
		if heldPaths[sp.Path] {
			return ""
		}
		if sp.Parent {
			for hp := range heldPaths {
				if strings.HasPrefix(hp, sp.Path+"/") {
					return ""
				}
			}
		}
		if prunePath == nil {
			return ""
		}
		return prunePath(sp)
	}
	r.paths = paths
	return kept, r
}

func (u *StateUnit) clone1() *StateUnit {
	return (&State{Units: []*StateUnit{u}}).clone().Units[0]
}

// unitPlan collects the plan of one unit before its actions are placed.
type unitPlan struct {
	name    string
	files   []FileChange
	actions []Action
}

func (up *unitPlan) act(kind ActionKind, unit, reason string) {
	if unit == "" {
		return // a template without DefaultInstance: nothing to run
	}
	up.actions = append(up.actions, Action{Kind: kind, Unit: unit, Reason: reason})
}

// unit plans one desired unit and returns its state after the apply.
func (p *planner) unit(u *compile.Unit) (*StateUnit, error) {
	prev := p.state.Unit(u.Name)
	up := &unitPlan{name: u.Name}
	hook := u.HookName
	if hook == "" && u.Hook >= 0 && u.Hook < len(p.opts.HookNames) {
		hook = p.opts.HookNames[u.Hook]
	}
	next := &StateUnit{Name: u.Name, Hook: hook, Masked: u.Mask}
	if !u.Mask && u.Enabled != nil {
		e := *u.Enabled
		next.Enabled = &e
	}

	// The files the spec wants, then the owned files it no longer has.
	type want struct {
		rel  string
		data []byte
	}
	var wants []want
	if u.Contents != nil && !u.Mask {
		wants = append(wants, want{u.Name, u.Contents})
	}
	for _, d := range u.Dropins {
		wants = append(wants, want{u.Name + ".d/" + d.Name, d.Contents})
	}
	wanted := map[string]bool{}
	var unitFile *FileChange
	for _, w := range wants {
		wanted[w.rel] = true
		fc, sf, err := p.write(u.Name, w.rel, w.data, prev)
		if err != nil {
			return nil, err
		}
		if sf != nil {
			next.Files = append(next.Files, *sf)
		}
		up.files = append(up.files, fc)
		if w.rel == u.Name {
			unitFile = &up.files[len(up.files)-1]
		}
	}
	if prev != nil {
		for _, f := range prev.Files {
			if wanted[f.Path] {
				continue
			}
			fc, keep, err := p.delete(u.Name, f, "no longer in the spec")
			if err != nil {
				return nil, err
			}
			if fc != nil {
				up.files = append(up.files, *fc)
			}
			if keep {
				next.Files = append(next.Files, f)
			}
		}
	}
	if u.Mask {
		p.checkMask(u, prev, up)
	}

	// What changed in the unit's definition.
	bodyChanged, installChanged := false, false
	for i := range up.files {
		f := &up.files[i]
		if !f.changes() {
			continue
		}
		if f != unitFile {
			bodyChanged = true // a drop-in: part of the definition
			continue
		}
		b, in := compareUnit(f.Old, f.New, f.Op == OpAdd || f.OldLink != "")
		bodyChanged = bodyChanged || b
		installChanged = installChanged || in
	}

	// The stamps of the hook's earlier contents: only the current one
	// can matter. Left alone while the unit file stays as it was (drift),
	// as it may name one of them.
	prevOwned := prev != nil && slices.ContainsFunc(prev.Files, func(f StateFile) bool { return f.Path == u.Name })
	if (u.Contents != nil && !u.Mask || prevOwned) && (unitFile == nil || unitFile.Op != OpKeep) {
		stamps, err := p.removeStamps(u.Name, "stamp of an earlier version of the hook")
		if err != nil {
			return nil, err
		}
		up.files = append(up.files, stamps...)
	}

	isNew := prev == nil
	unknown := prev != nil && prev.Incomplete
	// Whether systemd can disable the unit before the files change:
	// disable reads the [Install] of the unit's file, and refuses a unit
	// without one. A unit whose file an interrupted apply never wrote
	// has no links of hostprov's to undo; the enable, after the files
	// are written, makes them.
	onDisk := unitFile == nil || unitFile.Op != OpAdd
	// A unit that failed to start at an apply that finished: its files
	// and links are right, so only the start is tried again.
	retry := prev != nil && prev.Failed && !unknown
	prevMasked := prev != nil && prev.Masked
	prevEnabled := prev != nil && prev.Enabled != nil && *prev.Enabled
	content := u.Contents
	run := runName(u.Name, content)
	if u.Mask {
		if !prevMasked || unknown {
			up.act(ActStop, run, "masked")
			// Not on unknown alone: the unit may not exist, and
			// systemd refuses to disable what it cannot find.
			if prevEnabled {
				up.act(ActDisable, u.Name, "masked")
			}
			up.act(ActMask, u.Name, "mask: true")
		}
	} else {
		if prevMasked {
			up.act(ActUnmask, u.Name, "no longer masked")
		}
		switch {
		case u.Enabled == nil:
			if (bodyChanged || unknown) && restartable(u.Name) {
				up.act(ActTryRestart, run, orReason(unknown, "drop-ins changed"))
			}
		case *u.Enabled:
			started := false
			switch {
			case isNew:
				up.act(ActEnable, u.Name, "new")
				up.act(ActStart, run, "new")
				started = true
			case !prevEnabled || prevMasked:
				up.act(ActEnable, u.Name, "enabled: true")
				up.act(ActStart, run, "enabled: true")
				started = true
			case installChanged || unknown:
				r := orReason(unknown, "[Install] changed")
				if onDisk {
					up.act(ActDisable, u.Name, r)
				}
				up.act(ActEnable, u.Name, r)
			}
			if !started && (bodyChanged || unknown) {
				up.act(ActRestart, run, orReason(unknown, restartReason(content)))
			}
		default:
			if (prevEnabled || unknown) && onDisk {
				up.act(ActDisable, u.Name, "enabled: false")
				up.act(ActStop, run, "enabled: false")
			}
		}
		if retry && !up.starts() {
			switch {
			case u.Enabled == nil && !restartable(u.Name):
			case u.Enabled == nil:
				up.act(ActTryRestart, run, retryReason)
			case *u.Enabled:
				up.act(ActStart, run, retryReason)
			}
		}
	}
	// Without starts (--no-start) the failure stays to be retried.
	next.Failed = retry && !p.opts.manages() && !u.Mask && (u.Enabled == nil || *u.Enabled)
	change := "change"
	if isNew {
		change = "add"
	}
	p.add(up, change, hook)
	return next, nil
}

// retryReason labels the start of a unit that failed to start at the last
// apply, which finished: a result, not an interrupted apply.
const retryReason = "retry: it failed to start at the last apply"

// restartable reports whether a unit whose drop-ins changed can be
// restarted for them to take effect: not a device, whose unit systemd
// makes for a device the kernel has and refuses to start or restart; the
// drop-in of a device (a hook's deviceTimeout) applies from the reload on.
func restartable(name string) bool { return units.Type(name) != "device" }

// starts reports whether the unit's plan starts or restarts it.
func (up *unitPlan) starts() bool {
	for _, a := range up.actions {
		if a.Kind == ActStart || a.Kind == ActRestart || a.Kind == ActTryRestart {
			return true
		}
	}
	return false
}

func orReason(unknown bool, r string) string {
	if unknown {
		return "an earlier apply did not finish"
	}
	return r
}

// restartReason explains a restart: a oneshot service that does not remain
// after exit runs again.
func restartReason(content []byte) string {
	if f, err := units.Parse(content); err == nil {
		typ := lastValue(f.Values(units.SectionService, "Type"))
		rae := lastValue(f.Values(units.SectionService, "RemainAfterExit"))
		if typ == "oneshot" && !isYes(rae) {
			return "changed; a oneshot service, so it runs again"
		}
	}
	return "changed"
}

func lastValue(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

func isYes(s string) bool {
	switch strings.ToLower(s) {
	case "yes", "y", "true", "t", "on", "1":
		return true
	}
	return false
}

// remove plans pruning an owned unit that is no longer wanted, for the
// reason why, and returns what remains of it in the state (files left
// alone), or nil.
func (p *planner) remove(prev *StateUnit, why string) (*StateUnit, error) {
	up := &unitPlan{name: prev.Name}
	rest := &StateUnit{Name: prev.Name, Hook: prev.Hook, Set: prev.Set, Where: prev.Where}
	ownsUnitFile := false
	dropins := false
	for _, f := range prev.Files {
		if f.Path == prev.Name {
			ownsUnitFile = true
		} else {
			dropins = true
		}
	}
	changedDropins, removesUnitFile := false, false
	for _, f := range prev.Files {
		fc, keep, err := p.delete(prev.Name, f, why)
		if err != nil {
			return nil, err
		}
		if fc != nil {
			up.files = append(up.files, *fc)
			changedDropins = changedDropins || fc.changes() && f.Path != prev.Name
			removesUnitFile = removesUnitFile || f.Path == prev.Name && fc.Op == OpRemove
		}
		if keep {
			rest.Files = append(rest.Files, f)
		}
	}
	if ownsUnitFile && removesUnitFile {
		// Stop and disable only while the file is there: once it is
		// gone, an earlier apply did both before deleting it, and
		// systemd would refuse to disable a unit without a file. And
		// only when the file goes: one edited since hostprov wrote it
		// (drift) is not hostprov's to stop, disable or unlink, and
		// stays as it is with everything systemd does with it.
		if cur := p.current(prev.Name); cur != nil {
			up.act(ActStop, runName(prev.Name, cur), why)
			up.act(ActDisable, prev.Name, why)
		}
	}
	if prev.Masked {
		up.act(ActUnmask, prev.Name, why)
	}
	// Its stamps go with it, so that the hook runs again when it is added
	// back; not while its unit file stays (drift), which names one.
	if !slices.ContainsFunc(rest.Files, func(f StateFile) bool { return f.Path == prev.Name }) {
		stamps, err := p.removeStamps(prev.Name, "stamp of the hook, "+why)
		if err != nil {
			return nil, err
		}
		up.files = append(up.files, stamps...)
	}
	if !ownsUnitFile && !prev.Masked && dropins && changedDropins && restartable(prev.Name) {
		up.act(ActTryRestart, prev.Name, "drop-ins removed")
	}
	p.add(up, "remove", prev.Hook)
	if len(rest.Files) == 0 {
		return nil, nil
	}
	return rest, nil
}

// add records a unit's files and actions in the plan.
func (p *planner) add(up *unitPlan, change, hook string) {
	changed := len(up.actions) > 0
	for _, f := range up.files {
		if f.changes() {
			changed = true
		}
	}
	if !changed && change != "remove" {
		change = "none"
	}
	if change == "remove" && !changed && len(up.files) == 0 {
		change = "none" // only forgotten: its files were gone already
	}
	p.Units = append(p.Units, UnitChange{Unit: up.name, Hook: hook, Change: change})
	p.Files = append(p.Files, up.files...)
	p.Actions = append(p.Actions, up.actions...)
}

// write plans writing data to rel for unit and returns the file's state
// after the apply (nil when the plan cannot be applied).
func (p *planner) write(unit, rel string, data []byte, prev *StateUnit) (FileChange, *StateFile, error) {
	fc := FileChange{Unit: unit, Path: p.opts.nodePath(rel), rel: rel, New: data, NewSHA256: hashOf(data)}
	cur, err := readDisk(p.dir, rel)
	if err != nil {
		return fc, nil, err
	}
	var sf *StateFile
	if prev != nil {
		for i := range prev.Files {
			if prev.Files[i].Path == rel {
				sf = &prev.Files[i]
			}
		}
	}
	fc.Old, fc.OldSHA256, fc.OldLink, fc.oldIno = cur.data, cur.hash, cur.link, cur.ino
	done := &StateFile{Path: rel, SHA256: fc.NewSHA256}
	keep := func(why string) (FileChange, *StateFile, error) {
		fc.Op, fc.Drift, fc.Reason = OpKeep, true, why
		p.Warnings = append(p.Warnings, Problem{Unit: unit, Path: fc.Path, Message: why})
		old := *sf
		return fc, &old, nil
	}
	conflict := func(why string) (FileChange, *StateFile, error) {
		fc.Op, fc.Reason = OpKeep, why
		p.Conflicts = append(p.Conflicts, Problem{Unit: unit, Path: fc.Path, Message: why})
		return fc, nil, nil
	}
	// A unit file hostprov does not own yet may not take the name of a
	// unit the node has: not even with --adopt, which is for a stray
	// file in the unit directory, not for the node's own units.
	if rel == unit && sf == nil && cur.bad == "" {
		why, err := p.shadows(unit, cur)
		if err != nil {
			return fc, nil, err
		}
		if why != "" {
			return conflict(why)
		}
	}
	fixable := func(why string, fix Fix) (FileChange, *StateFile, error) {
		fc, sf, err := conflict(why)
		p.Conflicts[len(p.Conflicts)-1].Fix = &fix
		return fc, sf, err
	}
	switch {
	case cur.bad != "":
		return conflict(cur.bad)
	case !cur.exists:
		fc.Op, fc.Reason = OpAdd, "new"
		if sf != nil {
			fc.Reason = "missing on disk"
		}
	case cur.isLink && rel == unit && prev != nil && prev.Masked && cur.link == "/dev/null":
		// hostprov's own mask, undone by the unmask before files change.
		fc.Op, fc.Reason, fc.OldLink = OpAdd, "new (was masked)", ""
	case cur.isLink && sf != nil:
		if !p.opts.Force {
			return keep(fmt.Sprintf("hostprov wrote this file, but it is now a symbolic link to %s; left alone: run apply with --force to replace the link by the file", cur.link))
		}
		fc.Op, fc.Drift, fc.Reason = OpChange, true, "replaces a symbolic link (--force)"
	case cur.isLink:
		if !p.opts.Adopt {
			return fixable(fmt.Sprintf("a symbolic link to %s that hostprov did not make is where the spec puts this file", cur.link),
				Fix{Manual: "move it away", Flag: "--adopt", Does: "to replace it"})
		}
		fc.Op, fc.Reason = OpChange, "replaces a symbolic link (--adopt)"
	case sf != nil && sf.owns(cur.hash):
		fc.Op, fc.Reason = OpChange, "content changed"
		if cur.hash == fc.NewSHA256 {
			fc.Op, fc.Reason = OpUnchanged, ""
		}
	case sf != nil:
		switch {
		case cur.hash == fc.NewSHA256:
			fc.Op, fc.Reason = OpUnchanged, "edited on disk to what the spec says"
		case p.opts.Force:
			fc.Op, fc.Drift, fc.Reason = OpChange, true, "edited since hostprov wrote it; overwritten (--force)"
		default:
			return keep("edited since hostprov wrote it (drift); left alone: put the edit into the hook spec, or run apply with --force to overwrite it")
		}
	default:
		same := ""
		if cur.hash == fc.NewSHA256 {
			same = " (its content is what the spec says)"
		}
		if !p.opts.Adopt {
			return fixable("this file exists and hostprov did not write it"+same+"; hostprov never overwrites a file it does not own",
				Fix{Manual: "move it away", Flag: "--adopt", Does: "to take it over"})
		}
		fc.Op, fc.Reason = OpChange, "adopted (--adopt)"
		if same != "" {
			fc.Op = OpUnchanged
		}
	}
	// The inode of a file written is known once it is: Execute records
	// it. A file left as it is is the one on disk.
	if fc.Op == OpUnchanged {
		done.Inode = cur.ino
	}
	return fc, done, nil
}

// delete plans removing an owned file. keep reports that the file stays
// hostprov's (it is left alone); fc is nil when the file is gone already.
func (p *planner) delete(unit string, sf StateFile, reason string) (fc *FileChange, keep bool, err error) {
	cur, err := readDisk(p.dir, sf.Path)
	if err != nil {
		return nil, false, err
	}
	f := &FileChange{Unit: unit, Path: p.opts.nodePath(sf.Path), rel: sf.Path, Op: OpRemove, Reason: reason,
		Old: cur.data, OldSHA256: cur.hash, OldLink: cur.link}
	switch {
	case cur.bad != "":
		f.Op, f.Reason = OpKeep, cur.bad
		p.Conflicts = append(p.Conflicts, Problem{Unit: unit, Path: f.Path, Message: cur.bad})
		return f, true, nil
	case !cur.exists:
		return nil, false, nil
	case cur.isLink || !sf.owns(cur.hash):
		return p.notHostprovs(f, reason, "edited since hostprov wrote it", "edited since hostprov wrote it (drift)")
	case !sf.created(cur.hash, cur.ino):
		// The bytes are hostprov's, the file is not: a copy put in
		// place of hostprov's (a package's, a restore), or a state
		// entry that names a file hostprov never wrote. A hash alone
		// does not make a file hostprov's to delete.
		return p.notHostprovs(f, reason, "not the file hostprov wrote",
			"has the bytes hostprov wrote, but is not the file hostprov wrote (replaced since, or recorded without the file's identity by an earlier hostprov)")
	}
	return f, false, nil
}

// notHostprovs plans an owned file's removal when the file on disk is no
// longer the one hostprov wrote, for the reason why (short, and as a
// warning): removed with --force, kept with a warning otherwise.
func (p *planner) notHostprovs(f *FileChange, reason, short, why string) (*FileChange, bool, error) {
	if p.opts.Force {
		f.Drift, f.Reason = true, reason+"; "+short+" (--force)"
		return f, false, nil
	}
	f.Op, f.Drift, f.Reason = OpKeep, true, why+"; left alone: remove it by hand, or run with --force to remove it"
	p.Warnings = append(p.Warnings, Problem{Unit: f.Unit, Path: f.Path, Message: f.Reason})
	return f, true, nil
}

// checkMask adds a conflict when the unit file's place is taken by a file
// that will still be there when the unit is masked: systemd refuses to
// mask over a file.
func (p *planner) checkMask(u *compile.Unit, prev *StateUnit, up *unitPlan) {
	for _, f := range up.files {
		if f.rel == u.Name && f.Op == OpRemove {
			return // hostprov's own file, removed before the mask
		}
	}
	cur, err := readDisk(p.dir, u.Name)
	if err != nil || !cur.exists || cur.isLink && cur.link == "/dev/null" {
		return
	}
	what := "a unit file hostprov did not write"
	if cur.isLink {
		what = "a symbolic link to " + cur.link
	} else if prev != nil {
		for _, f := range prev.Files {
			if f.Path == u.Name {
				what = "the unit file hostprov wrote, edited since"
			}
		}
	}
	p.Conflicts = append(p.Conflicts, Problem{Unit: u.Name, Path: p.opts.nodePath(u.Name),
		Message: fmt.Sprintf("cannot mask %s: %s is in its place", u.Name, what),
		Fix:     &Fix{Manual: "move it away", Flag: "--force", Does: "if hostprov wrote it"}})
}

// current returns the unit file on disk, or nil.
func (p *planner) current(name string) []byte {
	cur, err := readDisk(p.dir, name)
	if err != nil || !cur.exists || cur.isLink {
		return nil
	}
	return cur.data
}

// finish places the actions in execution order and adds the reload.
func (p *planner) finish() {
	reload := false
	nfiles := 0
	for _, f := range p.Files {
		if f.changesUnit() {
			nfiles++
		}
	}
	links := 0
	for _, a := range p.Actions {
		switch a.Kind {
		case ActEnable, ActDisable, ActMask, ActUnmask:
			links++
		}
	}
	for _, u := range p.state.Units {
		if u.Incomplete {
			reload = true
		}
	}
	if nfiles > 0 || links > 0 {
		reload = true
	}
	var acts []Action
	for phase := 0; phase <= 4; phase++ {
		if phase == ActReload.phase() {
			if reload && !p.opts.Offline {
				acts = append(acts, Action{Kind: ActReload, Reason: reloadReason(nfiles, links)})
			}
			continue
		}
		for _, a := range p.Actions {
			if a.Kind.phase() != phase {
				continue
			}
			if !p.opts.manages() && (a.Kind == ActStart || a.Kind == ActRestart || a.Kind == ActTryRestart) {
				continue
			}
			if p.opts.Offline && a.Kind == ActStop {
				continue
			}
			acts = append(acts, a)
		}
	}
	if acts == nil {
		acts = []Action{}
	}
	p.Actions = acts
}

func reloadReason(files, links int) string {
	var parts []string
	if files > 0 {
		parts = append(parts, plural(files, "file")+" changed")
	}
	if links > 0 {
		parts = append(parts, plural(links, "enable/disable/mask action"))
	}
	if len(parts) == 0 {
		return "an earlier apply did not finish"
	}
	return strings.Join(parts, ", ")
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// compareUnit reports whether a unit file's definition (everything outside
// [Install]) and its [Install] differ between old and new. Comments and
// layout do not count. A file that cannot be parsed counts as changed.
func compareUnit(old, new []byte, added bool) (body, install bool) {
	if added {
		return true, true
	}
	of, err1 := units.Parse(old)
	nf, err2 := units.Parse(new)
	if err1 != nil || err2 != nil {
		return true, true
	}
	ob, oi := entries(of)
	nb, ni := entries(nf)
	return ob != nb, oi != ni
}

// entries flattens a unit's entries, outside and inside [Install].
func entries(f *units.File) (body, install string) {
	var b, in strings.Builder
	for _, s := range f.Sections {
		w := &b
		if s.Name == units.SectionInstall {
			w = &in
		}
		for _, e := range s.Entries {
			fmt.Fprintf(w, "[%s]%s=%s\n", s.Name, e.Key, e.Value)
		}
	}
	return b.String(), in.String()
}

// runName is the unit to start, stop or restart for a unit file: the unit
// itself, or for a template its DefaultInstance ("" when it has none, as a
// template cannot run).
func runName(name string, content []byte) string {
	at := strings.IndexByte(name, '@')
	if at < 0 || !strings.HasPrefix(name[at:], "@.") {
		return name
	}
	f, err := units.Parse(content)
	if err != nil {
		return ""
	}
	inst := lastValue(f.Values(units.SectionInstall, "DefaultInstance"))
	if inst == "" {
		return ""
	}
	return name[:at+1] + inst + name[at+1:]
}
