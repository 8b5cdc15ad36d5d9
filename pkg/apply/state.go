package apply

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
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

// stateFileName is the name of the state file in the state directory.
const stateFileName = "state.json"

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
