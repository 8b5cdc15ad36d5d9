package compile

import (
	"strconv"

	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/units"
)

// origin is where in the spec an entry comes from: the value at the path
// of the hook, then field, then name, then "[index]" when index >= 0
// (".type"; ".env.", "HOME"; ".pre", 2; ".directives.", "Unit", 0); for an
// entry of a manifest (line >= 1), that line of the text there. The path
// and position are made (path, where) only for an entry a problem is
// reported at.
type origin struct {
	field, name string
	index       int
	line        int
}

// searchMax is the most entries origin searches one by one.
const searchMax = 32

// origin is where e, an entry g added, comes from. The few entries of a
// usual unit are searched; a unit of more gets an index on first use.
func (g *gen) origin(e *units.Entry) origin {
	if g.from == nil && len(g.ents) > searchMax {
		g.from = make(map[*units.Entry]int, len(g.ents))
		for i, x := range g.ents {
			g.from[x] = i
		}
	}
	if g.from != nil {
		if i, ok := g.from[e]; ok {
			return g.origins[i]
		}
		return origin{}
	}
	for i, x := range g.ents {
		if x == e {
			return g.origins[i]
		}
	}
	return origin{}
}

// at is the origin of the value at the hook's field (".type").
func at(field string) origin { return origin{field: field, index: -1} }

// item is the origin of item k of the list at the hook's field (".pre").
func item(field string, k int) origin { return origin{field: field, index: k} }

// path is the path in the spec of o.
func (g *gen) path(o origin) string {
	if o.index < 0 {
		return g.p + o.field + o.name
	}
	return g.p + o.field + o.name + "[" + strconv.Itoa(o.index) + "]"
}

// where is the position in the spec of o.
func (g *gen) where(o origin) hooks.Position {
	if o.line >= 1 {
		return g.b.spec.WhereInScalar(g.path(o), o.line)
	}
	return g.b.spec.Where(g.path(o))
}

// userText reports whether o is text the user wrote as unit text (a
// manifest, directives), whose Exec*= lines checkExec checks: whether its
// path holds ".manifest", ".directives." or ".contents". The hook's path
// holds none of them and no field other than these two does; a name is a
// valid variable name (no '.') or a directive section, under
// ".directives.".
func (o origin) userText() bool {
	return o.field == ".manifest" || o.field == ".directives."
}
