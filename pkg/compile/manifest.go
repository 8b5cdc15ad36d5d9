package compile

import (
	"fmt"
	"strings"

	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/units"
)

// manifest adds the entries of a non-raw manifest, the body of the unit
// type's own section (kops's meaning: the body of [Service]).
func (g *gen) manifest(own string, structured map[sectionKey]origin) {
	if g.h.Manifest == "" {
		return
	}
	path := g.p + ".manifest"
	if own == "" {
		g.b.errorf(path, "use useRawManifest: true and write the whole unit, or use directives",
			"%s %s unit has no section of its own for the manifest to be the body of", article(units.Type(UnitName(g.h))), units.Type(UnitName(g.h)))
		g.ok = false
		return
	}
	f := g.b.parseText(path, g.h.Manifest, own)
	if f == nil {
		g.ok = false
		return
	}
	sec := g.section(own)
	for _, s := range f.Sections {
		for _, e := range s.Entries {
			// Lines count from the manifest's first line: the parser saw
			// one header line more, so every entry is on line 1 or after.
			o := origin{field: ".manifest", index: -1, line: e.Line - 1}
			g.conflict(own, e.Key, o, structured)
			ne := g.addEntry(sec, e.Key, e.Value, o)
			ne.Comments = e.Comments
		}
	}
}

// directives adds the free-form Key=Value entries, per section, in order.
func (g *gen) directives(structured map[sectionKey]origin) {
	for _, sect := range sortedKeys(g.h.Directives) {
		for k, d := range g.h.Directives[sect] {
			o := origin{field: ".directives.", name: sect, index: k}
			key, value, _ := strings.Cut(d, "=")
			key, value = strings.TrimSpace(key), strings.TrimSpace(value)
			g.conflict(sect, key, o, structured)
			g.add(sect, key, value, o)
		}
	}
}

// conflict reports a key that a structured field sets already.
func (g *gen) conflict(section, key string, o origin, structured map[sectionKey]origin) {
	set, ok := structured[sectionKey{section, key}]
	if !ok {
		return
	}
	field := g.path(set)
	g.b.report(hooks.Error, g.where(o), g.path(o),
		fmt.Sprintf("%s= is set by %s already; systemd would use only one of them", key, field),
		fmt.Sprintf("set it in one place: remove this line or %s", field))
	g.ok = false
}
