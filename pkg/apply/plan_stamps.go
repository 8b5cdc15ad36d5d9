package apply

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hostprov/hostprov/internal/fsutil"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/units"
)

// A command hook that runs once (when: Once) is skipped while its stamp
// exists: an empty file in compile.StampDir named by the unit and the hash
// of its content, which the unit writes after its steps succeed. Stamps
// are hostprov's state as much as the unit files: a plan that removes a
// hook removes its stamps (so that the hook runs again when it is added
// back), and one that changes a hook removes the stamps of its earlier
// contents (only the current one can matter). Unlike unit files they are
// not recorded in the state: the unit writes them, not hostprov, and their
// names say whose they are.
//
// Only files directly in the stamp directory that are a unit's own stamps
// (compile.IsStamp) are removed, and never through a symbolic link: not
// when the stamp directory or one of its parents is one, and a stamp that
// is a link is left alone.

// stampOf returns the stamp a unit file names in its
// ConditionPathExists=!STAMP, as the node sees it, or "" when it names
// none.
func stampOf(content []byte) string {
	if content == nil {
		return ""
	}
	f, err := units.Parse(content)
	if err != nil {
		return ""
	}
	for _, v := range f.Values(units.SectionUnit, "ConditionPathExists") {
		p, ok := strings.CutPrefix(v, "!"+compile.StampDir+"/")
		if ok && p != "" && !strings.Contains(p, "/") {
			return compile.StampDir + "/" + p
		}
	}
	return ""
}

// hostPath is where a path of the node is on this machine: under Root when
// it is set.
func (o Options) hostPath(nodePath string) string {
	return filepath.Join(o.Root, filepath.FromSlash(nodePath))
}

// openStampDir opens the stamp directory, from Root down one directory
// at a time without following a symbolic link, so that what is listed and
// removed in it is in the stamp directory whatever is swapped meanwhile.
// missing reports that it does not exist, so there are no stamps; bad says
// why hostprov must not touch it: it or a directory above it (below Root)
// is a symbolic link or not a directory.
func (o Options) openStampDir() (dir *fsutil.Dir, missing bool, bad string, err error) {
	top := o.Root
	if top == "" {
		top = "/"
	}
	dir, err = fsutil.OpenDir(top)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, true, "", nil // a --root not made yet
	case err != nil:
		return nil, false, "", fsError("opening", top, err)
	}
	for _, part := range strings.Split(strings.Trim(compile.StampDir, "/"), "/") {
		sub, err := dir.OpenDir(part)
		p := dir.Join(part)
		dir.Close()
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, true, "", nil
		case errors.Is(err, fsutil.ErrNotDir):
			return nil, false, fmt.Sprintf("%s is a symbolic link or not a directory; hostprov removes stamps only in a real directory, so that nothing is removed elsewhere: replace the link by a directory, or remove the stamps by hand", p), nil
		case err != nil:
			return nil, false, "", fsError("reading", p, err)
		}
		dir = sub
	}
	return dir, false, "", nil
}

// stampDir is the stamp directory as the plan found it: the names of its
// regular files, and why nothing in it may be removed ("" when it may).
type stampDir struct {
	names []string
	bad   string
}

// readStamps lists the stamp directory once per plan.
func (p *planner) readStamps() (*stampDir, error) {
	if p.stamps != nil {
		return p.stamps, nil
	}
	p.stamps = &stampDir{}
	dir, missing, bad, err := p.opts.openStampDir()
	if err != nil || missing {
		return p.stamps, err
	}
	p.stamps.bad = bad
	if bad != "" {
		// Listed even when nothing in it may be removed, to warn of
		// the stamps that stay; listing reads, and changes nothing.
		entries, _ := os.ReadDir(p.opts.hostPath(compile.StampDir))
		for _, e := range entries {
			if e.Type().IsRegular() {
				p.stamps.names = append(p.stamps.names, e.Name())
			}
		}
		return p.stamps, nil
	}
	defer dir.Close()
	entries, err := dir.ReadDir()
	if err != nil {
		return nil, fsError("reading", dir.Path(), err)
	}
	for _, e := range entries {
		if e.Type.IsRegular() {
			p.stamps.names = append(p.stamps.names, e.Name)
		}
	}
	return p.stamps, nil
}

// removeStamps plans removing the stamps of unit in the stamp directory,
// but for those that a unit file of the node names after the apply
// (p.keepStamps): the hook was removed, or these stamps are of its
// earlier contents.
func (p *planner) removeStamps(unit, reason string) ([]FileChange, error) {
	sd, err := p.readStamps()
	if err != nil {
		return nil, err
	}
	var out []FileChange
	warned := false
	for _, name := range sd.names {
		if !compile.IsStamp(unit, name) {
			continue
		}
		node := compile.StampDir + "/" + name
		if p.keepStamps[node] {
			continue
		}
		if sd.bad != "" {
			if !warned {
				p.Warnings = append(p.Warnings, Problem{Unit: unit, Path: compile.StampDir, Message: "its stamps are left alone: " + sd.bad})
				warned = true
			}
			continue
		}
		out = append(out, FileChange{Unit: unit, Path: node, Op: OpRemove, Reason: reason, Stamp: true})
	}
	return out, nil
}

// stampTime returns when a unit file's stamp was written (its
// modification time), or nil when it names none or the stamp is not
// there. It is what systemd checks, so it follows a link as systemd
// does.
func (o Options) stampTime(content []byte) (string, *time.Time) {
	s := stampOf(content)
	if s == "" {
		return "", nil
	}
	fi, err := os.Stat(o.hostPath(s))
	if err != nil {
		return s, nil
	}
	t := fi.ModTime()
	return s, &t
}
