package apply

import (
	"strings"

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
	sd, err := p.node.stamps()
	if err != nil {
		return nil, err
	}
	p.stamps = sd
	return sd, nil
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
