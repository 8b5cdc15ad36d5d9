package apply

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hostprov/hostprov/internal/fsutil"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/units"
)

// StateVersion is the format version of the state file. A state file with
// another version is refused rather than guessed at.
//
// Version 2 adds Paths (files, directories and links outside the unit
// directory). It is written only when the state has paths: a state
// without is version 1, as it always was, so that an earlier hostprov
// still reads it; one with paths is version 2, which an earlier hostprov
// refuses with its format-version error rather than forgetting the paths.
// Version 1 is read as version 2 without paths.
//
// Version 3 adds Sets, who owns each spec set that someone other than the
// node's own specs applies (the Kubernetes agent). It is written only when
// the state has such a set, for the same reason: a node that never ran the
// agent keeps a state an earlier hostprov reads, and an earlier hostprov
// refuses one whose owners it would drop.
const StateVersion = 3

// stateVersionNoPaths is the version written for a state without paths or
// owned sets, and stateVersionNoSets the one for a state with paths but
// no owned sets.
const (
	stateVersionNoPaths = 1
	stateVersionNoSets  = 2
)

// StateFileName is the name of the state file in the state directory.
const StateFileName = "state.json"

// State is what hostprov has installed on a node: every unit it owns, the
// files it wrote for it with their hashes, and how it left the unit
// (enabled, masked). It is the only thing that makes a file hostprov's: a
// file not in the state is never modified or removed without --adopt.
//
// The state is written before files change (recording the hashes about to
// be written, so that a crash cannot leave a file hostprov wrote but does
// not know of), after they changed, and at the end; see Execute.
type State struct {
	Version int `json:"version"`
	// UnitDir is the unit directory the files are in, as seen on the node
	// (without --root). A state is only used with the unit directory it
	// was written for.
	UnitDir string `json:"unitDir"`
	// Inputs is Options.Inputs of the last apply, recorded when it
	// finished what it planned and left no unit of an earlier spec in
	// place (--no-prune): then the units of the state are those of the
	// inputs, and NewPlanFromState may stand in for rendering them again.
	// Empty otherwise.
	Inputs string       `json:"inputs,omitempty"`
	Units  []*StateUnit `json:"units"`
	// Paths are the files, directories and links hostprov placed for
	// hooks outside the unit directory, parents before what is in them.
	Paths []*PathState `json:"paths,omitempty"`
	// Sets records the owner of every spec set of the state's units and
	// paths that has one (SpecSet.Owner), sorted by name. A set not listed
	// is the node's own (hostprov apply's). The name of a set alone does
	// not say whose it is: a node's spec could take any name.
	Sets []*SetState `json:"sets,omitempty"`
}

// SetState is the owner of a spec set (see SpecSet.Owner).
type SetState struct {
	Name  string `json:"name"`
	Owner string `json:"owner"`
}

// SetOwner is the recorded owner of the spec set name, and whether the
// state records one. A set without a record is the node's own, or one
// applied by an earlier hostprov, which recorded no owners: the first
// apply that has the set records its owner.
func (s *State) SetOwner(name string) (owner string, recorded bool) {
	for _, r := range s.Sets {
		if r.Name == name {
			return r.Owner, true
		}
	}
	return "", false
}

// StateUnit is one owned unit.
type StateUnit struct {
	// Name is the unit's name, Hook the name of the hook it came from.
	Name string `json:"name"`
	Hook string `json:"hook,omitempty"`
	// Set is the spec set that owns the unit (see SpecSet), and Where
	// the place of its hook in that set's spec when it was last applied
	// ("FILE:LINE:COL"), for messages about a unit another set claims.
	// An empty Set is a unit recorded before spec sets, when a node had
	// one spec: the next apply takes it over (NewPlanSets).
	Set   string `json:"set,omitempty"`
	Where string `json:"where,omitempty"`
	// Files are the files hostprov wrote for the unit: the unit file
	// (path NAME) and drop-ins (NAME.d/FILE), relative to the unit
	// directory, sorted by path.
	Files []StateFile `json:"files,omitempty"`
	// Enabled is the enablement hostprov applied: true (enabled), false
	// (disabled) or nil (left as it was). Masked says hostprov masked it.
	Enabled *bool `json:"enabled,omitempty"`
	Masked  bool  `json:"masked,omitempty"`
	// Incomplete marks a unit an apply was working on when it stopped (a
	// crash, a failed reload or link change): its links and running state
	// are unknown, so the next apply redoes every idempotent step for it
	// (enable, start or restart, reload).
	Incomplete bool `json:"incomplete,omitempty"`
	// Failed marks a unit whose start (or restart) failed at an apply
	// that otherwise finished: its files, links and systemd's view of
	// them are as recorded, and the unit is a result to report, not an
	// interrupted apply. The next apply starts it again, and does nothing
	// else for it that nothing else calls for.
	Failed bool `json:"failed,omitempty"`
}

// StateFile is one file hostprov wrote.
type StateFile struct {
	Path string `json:"path"`
	// SHA256 is the hex SHA-256 of the bytes hostprov wrote; empty while
	// the file is being created.
	SHA256 string `json:"sha256,omitempty"`
	// Inode is the inode number of the file with those bytes: the file
	// hostprov created, told from another that has the same bytes (a
	// package's copy, a file restored from elsewhere). 0 when it is not
	// known (a state of an earlier hostprov).
	Inode uint64 `json:"inode,omitempty"`
	// Next is the hash of the bytes an interrupted apply was writing, and
	// NextInode the inode of the file it wrote them to (0 until it was
	// created): the file on disk is either SHA256 and Inode, or Next and
	// NextInode, both hostprov's.
	Next      string `json:"next,omitempty"`
	NextInode uint64 `json:"nextInode,omitempty"`
}

// owns reports whether hash is one of the contents hostprov wrote (or was
// writing) to the file.
func (f StateFile) owns(hash string) bool {
	return hash != "" && (hash == f.SHA256 || hash == f.Next)
}

// created reports whether the file with these bytes and this inode is one
// hostprov created: its contents are hostprov's and it is the very file.
// Only such a file is removed without --force.
func (f StateFile) created(hash string, ino uint64) bool {
	return hash != "" && ino != 0 &&
		(hash == f.SHA256 && ino == f.Inode || hash == f.Next && ino == f.NextInode)
}

// Unit returns the state of the named unit, or nil.
func (s *State) Unit(name string) *StateUnit {
	for _, u := range s.Units {
		if u.Name == name {
			return u
		}
	}
	return nil
}

// file returns the state of a file (a path relative to the unit dir) and
// the unit that owns it.
func (s *State) file(path string) (*StateUnit, *StateFile) {
	for _, u := range s.Units {
		for i := range u.Files {
			if u.Files[i].Path == path {
				return u, &u.Files[i]
			}
		}
	}
	return nil, nil
}

// PathState is the state file's path in a state directory.
func StatePath(stateDir string) string { return filepath.Join(stateDir, StateFileName) }

// MaxStateSize is the largest state file hostprov reads: some hundred
// times what 20,000 units with drop-ins take, so that a state file that
// is not one (a link to /dev/zero, a file grown by a bug) cannot make
// hostprov read without bound.
const MaxStateSize = 256 << 20

// readState reads the state file at path as unit files are read: through
// its directory, never following a symbolic link, never opening what is
// not a regular file (a FIFO would block, a device never end), and at most
// MaxStateSize bytes. A missing file or directory is fs.ErrNotExist.
func readState(path string) ([]byte, error) {
	dir, err := fsutil.OpenDir(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	return dir.ReadFile(filepath.Base(path), MaxStateSize)
}

// LoadState reads the state file at path. A missing file is an empty state
// (the first apply on a node); a file that cannot be read or understood is
// an error that says what to do, because guessing would lose track of
// files hostprov wrote.
func LoadState(path string) (*State, error) {
	data, err := readState(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &State{Version: StateVersion}, nil
	case errors.Is(err, fsutil.ErrNotRegular), errors.Is(err, fsutil.ErrTooLarge):
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("state file %s is not hostprov's: %v; hostprov reads its state only from a regular file of at most %d MiB, never through a link: "+
			"find out who put it there; if you know no hostprov unit is installed, move it away and run apply with --adopt to take over the files the spec names", path, err, MaxStateSize>>20)
	case errors.Is(err, fsutil.ErrNotDir):
		return nil, linkedStateDir(filepath.Dir(path))
	case err != nil:
		return nil, fsError("reading the state file", path, err)
	}
	st, err := ParseState(data)
	if err != nil {
		return nil, fmt.Errorf("state file %s is corrupt: %v; it records which unit files hostprov owns, so hostprov will not guess: restore it from a backup, or, if you know no hostprov unit is installed, move it away and run apply with --adopt to take over the files the spec names", path, err)
	}
	return st, nil
}

// RecordedInputs returns the inputs the state file at path records, or ""
// when it records none or cannot be read. It decodes the file only up to
// them, which come before the units: it is for deciding, before the lock is
// taken, whether rendering may wait for NewPlanFromState, which checks
// again under the lock.
func RecordedInputs(path string) string {
	data, err := readState(path)
	if err != nil {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return ""
		}
		switch key {
		case "inputs":
			var in string
			if dec.Decode(&in) != nil {
				return ""
			}
			return in
		case "units":
			return ""
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return ""
		}
	}
	return ""
}

// ParseState decodes and checks a state file. Every path must be a unit
// file or drop-in of its own unit, so that a tampered state cannot make
// hostprov remove a file elsewhere.
func ParseState(data []byte) (*State, error) {
	var st State
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("data after the JSON object")
	}
	switch {
	case st.Version == stateVersionNoPaths && len(st.Paths) > 0:
		return nil, errors.New("format version 1 has no paths")
	case st.Version < StateVersion && len(st.Sets) > 0:
		return nil, fmt.Errorf("format version %d has no sets", st.Version)
	case st.Version < stateVersionNoPaths || st.Version > StateVersion:
		return nil, fmt.Errorf("format version %d, this hostprov reads versions %d to %d", st.Version, stateVersionNoPaths, StateVersion)
	}
	if err := checkStatePaths(&st); err != nil {
		return nil, err
	}
	if err := checkStateSets(&st); err != nil {
		return nil, err
	}
	seen, seenFile := map[string]bool{}, map[string]bool{}
	for i, u := range st.Units {
		if u == nil {
			return nil, fmt.Errorf("units[%d] is null", i)
		}
		if err := checkUnitName(u.Name); err != nil {
			return nil, fmt.Errorf("units[%d]: %v", i, err)
		}
		if seen[u.Name] {
			return nil, fmt.Errorf("units[%d]: unit %s is listed twice", i, u.Name)
		}
		seen[u.Name] = true
		for j, f := range u.Files {
			if err := checkFilePath(u.Name, f.Path); err != nil {
				return nil, fmt.Errorf("units[%d].files[%d]: %v", i, j, err)
			}
			if seenFile[f.Path] {
				return nil, fmt.Errorf("units[%d].files[%d]: %s is listed twice", i, j, f.Path)
			}
			seenFile[f.Path] = true
			for _, h := range []string{f.SHA256, f.Next} {
				if h != "" && !isHexHash(h) {
					return nil, fmt.Errorf("units[%d].files[%d]: %q is not a hex SHA-256", i, j, h)
				}
			}
		}
	}
	return &st, nil
}

// Save writes the state atomically to path, mode 0600.
func (s *State) Save(path string) error {
	data, err := s.marshal()
	if err != nil {
		return err
	}
	// The state directory is never entered through a link, as Execute
	// writes it.
	dir, err := fsutil.OpenDir(filepath.Dir(path))
	if err != nil {
		return fsError("writing the state file", path, err)
	}
	defer dir.Close()
	if _, err := fsutil.WriteFiles([]fsutil.File{{Dir: dir, Name: filepath.Base(path), Data: data, Perm: 0o600}}); err != nil {
		return fsError("writing the state file", path, err)
	}
	return nil
}

// marshal encodes the state. Units and files keep their order, which after
// an apply is the spec's (units in the order of their hooks, then the units
// of earlier specs that stay; a unit file before its drop-ins), so that a
// plan made from the state lists them as a plan made from the spec does.
func (s *State) marshal() ([]byte, error) {
	s.Sets = s.usedSets()
	switch {
	case len(s.Sets) > 0:
		s.Version = StateVersion
	case len(s.Paths) > 0:
		s.Version = stateVersionNoSets
	default:
		s.Version = stateVersionNoPaths
	}
	if s.Units == nil {
		s.Units = []*StateUnit{}
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// interrupted reports whether the apply that wrote the state stopped
// before it finished: a unit is still marked incomplete, or a file still has
// the hash it was about to get. Files are written only while the units they
// belong to are so marked, so only such an apply can have left temporary
// files.
func (s *State) interrupted() bool {
	for _, u := range s.Units {
		if u.Incomplete {
			return true
		}
		for _, f := range u.Files {
			if f.Next != "" {
				return true
			}
		}
	}
	for _, sp := range s.Paths {
		// Only the intent records a path without its inode.
		if sp.Next != "" || sp.Inode == 0 {
			return true
		}
	}
	return false
}

// equal reports whether two states encode the same: nil and empty lists
// are alike, as they are in the file.
func (s *State) equal(o *State) bool {
	if s.UnitDir != o.UnitDir || s.Inputs != o.Inputs || len(s.Units) != len(o.Units) || len(s.Paths) != len(o.Paths) || len(s.Sets) != len(o.Sets) {
		return false
	}
	for i := range s.Sets {
		if *s.Sets[i] != *o.Sets[i] {
			return false
		}
	}
	for i := range s.Paths {
		if *s.Paths[i] != *o.Paths[i] {
			return false
		}
	}
	for i, u := range s.Units {
		v := o.Units[i]
		if u.Name != v.Name || u.Hook != v.Hook || u.Set != v.Set || u.Where != v.Where || u.Masked != v.Masked || u.Incomplete != v.Incomplete || u.Failed != v.Failed ||
			(u.Enabled == nil) != (v.Enabled == nil) || u.Enabled != nil && *u.Enabled != *v.Enabled ||
			len(u.Files) != len(v.Files) {
			return false
		}
		for j := range u.Files {
			if u.Files[j] != v.Files[j] {
				return false
			}
		}
	}
	return true
}

// clone returns a deep copy of the state.
func (s *State) clone() *State {
	c := &State{Version: s.Version, UnitDir: s.UnitDir, Inputs: s.Inputs}
	for _, u := range s.Units {
		cu := *u
		cu.Files = append([]StateFile(nil), u.Files...)
		if u.Enabled != nil {
			e := *u.Enabled
			cu.Enabled = &e
		}
		c.Units = append(c.Units, &cu)
	}
	for _, sp := range s.Paths {
		c.Paths = append(c.Paths, cloneStatePath(sp))
	}
	for _, r := range s.Sets {
		cr := *r
		c.Sets = append(c.Sets, &cr)
	}
	return c
}

func hashOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func isHexHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// checkUnitName refuses a unit name that is not one systemd accepts, and in
// particular anything with a '/': a name becomes a path in the unit dir.
// render refuses such names already; this is defence in depth, and guards
// against a tampered state file.
func checkUnitName(name string) error {
	if strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return fmt.Errorf("unit name %q would leave the unit directory", name)
	}
	return units.ValidateName(name)
}

// checkFilePath refuses a file path that is not unit's own file (NAME) or
// one of its drop-ins (NAME.d/FILE with FILE a plain name).
func checkFilePath(unit, path string) error {
	if path == unit {
		return nil
	}
	rest, ok := strings.CutPrefix(path, unit+".d/")
	if !ok || checkDropinName(rest) != nil {
		return fmt.Errorf("%q is neither unit %s nor one of its drop-ins", path, unit)
	}
	return nil
}

func checkDropinName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("drop-in name %q would leave the drop-in directory", name)
	}
	return nil
}

// checkStateSets checks the owners of a state file: each set named once,
// by a name a set may have, with an owner.
func checkStateSets(st *State) error {
	seen := map[string]bool{}
	for i, r := range st.Sets {
		switch {
		case r == nil:
			return fmt.Errorf("sets[%d] is null", i)
		case hooks.CheckSetName(r.Name) != nil:
			return fmt.Errorf("sets[%d]: %v", i, hooks.CheckSetName(r.Name))
		case r.Owner == "":
			return fmt.Errorf("sets[%d]: set %s has no owner", i, r.Name)
		case seen[r.Name]:
			return fmt.Errorf("sets[%d]: set %s is listed twice", i, r.Name)
		}
		seen[r.Name] = true
	}
	return nil
}

// usedSets is s.Sets without the sets that no unit or path of s has any
// more, sorted by name: a set's owner is recorded for as long as the set
// has something on the node.
func (s *State) usedSets() []*SetState {
	if len(s.Sets) == 0 {
		return nil
	}
	used := map[string]bool{}
	for _, u := range s.Units {
		used[u.Set] = true
	}
	for _, p := range s.Paths {
		used[p.Set] = true
	}
	var out []*SetState
	for _, r := range s.Sets {
		if used[r.Name] {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *SetState) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// recordOwner records owner as the owner of set; an empty owner (the
// node's own specs) is recorded by having no record.
func (s *State) recordOwner(set, owner string) {
	s.Sets = slices.DeleteFunc(s.Sets, func(r *SetState) bool { return r.Name == set })
	if owner != "" {
		s.Sets = append(s.Sets, &SetState{Name: set, Owner: owner})
	}
}
