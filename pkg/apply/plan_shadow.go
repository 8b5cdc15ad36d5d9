package apply

import (
	"fmt"
	"path"
)

// shadows returns why the unit file of unit, which hostprov does not own,
// may not be written to the unit directory: the node has a unit of that
// name (or the template of that instance) elsewhere in its unit search
// path, or an alias or a linked unit in the unit directory itself. A unit
// file there would replace the node's own unit wherever it is used, and
// deleting the hook would then stop and disable it. cur is what is at the
// unit's path in the unit directory, whose plain file is write's to judge
// (a stray file --adopt may take over). "" when nothing is in the way.
func (p *planner) shadows(unit string, cur diskFile) (string, error) {
	// A link to a unit file of the same type is an alias (Alias=) or a
	// linked unit (systemctl link): systemd loads it. A link to anything
	// else stays a stray link that --adopt may replace.
	if cur.isLink && cur.link != "/dev/null" && path.Ext(cur.link) == path.Ext(unit) {
		return p.shadowMessage(unit, "", nodeEntry{path: p.opts.nodePath(unit), link: cur.link, inUnitDir: true}), nil
	}
	if p.nodeUnits == nil {
		idx, err := p.node.units()
		if err != nil {
			return "", err
		}
		p.nodeUnits = idx
	}
	// The unit's own entry in the unit directory is cur: a plain file,
	// a mask, or nothing.
	if e, ok := pickEntry(p.nodeUnits[unit], true); ok {
		return p.shadowMessage(unit, "", e), nil
	}
	if tmpl := templateOf(unit); tmpl != "" && tmpl != unit && !p.ownsUnitFile(tmpl) {
		if e, ok := pickEntry(p.nodeUnits[tmpl], false); ok {
			return p.shadowMessage(unit, tmpl, e), nil
		}
	}
	return "", nil
}

// pickEntry returns the entry that names a unit best: a unit file (or
// alias), in systemd's order, or else an enable link. skipOwn leaves out
// the plain entry of the plan's own unit directory.
func pickEntry(es []nodeEntry, skipOwn bool) (nodeEntry, bool) {
	for _, wants := range []bool{false, true} {
		for _, e := range es {
			if e.wants == wants && !(skipOwn && e.inUnitDir && !e.wants) {
				return e, true
			}
		}
	}
	return nodeEntry{}, false
}

// ownsUnitFile reports whether the unit file of name is hostprov's: the
// state records it, or this plan writes it.
func (p *planner) ownsUnitFile(name string) bool {
	if u := p.desired[name]; u != nil && u.Contents != nil && !u.Mask {
		return true
	}
	if su := p.state.Unit(name); su != nil {
		for _, f := range su.Files {
			if f.Path == name {
				return true
			}
		}
	}
	return false
}

func (p *planner) shadowMessage(unit, tmpl string, e nodeEntry) string {
	var what string
	switch {
	case e.wants:
		what = fmt.Sprintf("an enable link %s (to %s) names it", e.path, orDash(e.link))
	case e.link == "/dev/null":
		what = fmt.Sprintf("%s masks it", e.path)
	case e.link != "":
		what = fmt.Sprintf("%s, a symbolic link to %s (an alias or a linked unit)", e.path, e.link)
	default:
		what = e.path
	}
	has := "a unit " + unit
	if tmpl != "" {
		has = fmt.Sprintf("the template %s of %s", tmpl, unit)
	}
	return fmt.Sprintf("the node already has %s that hostprov did not install: %s; a unit file of that name in %s would replace it "+
		"wherever it is used, and removing the hook would stop and disable it; hostprov takes over a stray file in %s, never a unit the node has. "+
		"To change the node's unit, make the hook drop-ins only (only dropins:, and enabled:), which adds %s.d/*.conf to it; to run something of your own, give the hook a name the node does not use",
		has, what, p.opts.unitDir(), p.opts.unitDir(), unit)
}
