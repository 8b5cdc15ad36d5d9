package apply

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/hostprov/hostprov/internal/fsutil"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/units"
)

// PathState is the state file's path in a state directory.
func StatePath(stateDir string) string { return filepath.Join(stateDir, stateFileName) }

// maxStateSize is the largest state file hostprov reads: some hundred
// times what 20,000 units with drop-ins take, so that a state file that
// is not one (a link to /dev/zero, a file grown by a bug) cannot make
// hostprov read without bound.
const maxStateSize = 256 << 20

// readState reads the state file at path as unit files are read: through
// its directory, never following a symbolic link, never opening what is
// not a regular file (a FIFO would block, a device never end), and at most
// maxStateSize bytes. A missing file or directory is fs.ErrNotExist.
func readState(path string) ([]byte, error) {
	dir, err := fsutil.OpenDir(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	return dir.ReadFile(filepath.Base(path), maxStateSize)
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
			"find out who put it there; if you know no hostprov unit is installed, move it away and run apply with --adopt to take over the files the spec names", path, err, maxStateSize>>20)
	case errors.Is(err, fsutil.ErrNotDir):
		return nil, linkedStateDir(filepath.Dir(path))
	case err != nil:
		return nil, fsError("reading the state file", path, err)
	}
	st, err := parseState(data)
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

// parseState decodes and checks a state file. Every path must be a unit
// file or drop-in of its own unit, so that a tampered state cannot make
// hostprov remove a file elsewhere.
func parseState(data []byte) (*State, error) {
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

// checkStatePaths checks the paths of a state file, so that a tampered one
// cannot make hostprov remove something in its own directories or twice.
func checkStatePaths(st *State) error {
	seen := map[string]bool{}
	opts := Options{UnitDir: st.UnitDir}
	for i, sp := range st.Paths {
		if sp == nil {
			return fmt.Errorf("paths[%d] is null", i)
		}
		if err := checkNodePath(sp.Path, opts); err != nil {
			return fmt.Errorf("paths[%d]: %v", i, err)
		}
		switch sp.Kind {
		case KindFile, KindDirectory, KindLink:
		default:
			return fmt.Errorf("paths[%d]: kind %q is not file, directory or link", i, sp.Kind)
		}
		if seen[sp.Path] {
			return fmt.Errorf("paths[%d]: %s is listed twice", i, sp.Path)
		}
		seen[sp.Path] = true
		for _, h := range []string{sp.SHA256, sp.Next, sp.PriorSHA256} {
			if h != "" && !isHexHash(h) {
				return fmt.Errorf("paths[%d]: %q is not a hex SHA-256", i, h)
			}
		}
	}
	return nil
}
