package compile

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/units"
)

// longArg is a command line e made mostly of one argument: the one at
// the path of o, then field, then "[index]" when index >= 0 (".sh" of a
// step; "[2]" of exec). It is what to point at when the line is too long.
type longArg struct {
	e     *units.Entry
	o     origin
	field string
	index int
}

// argPath is the path in the spec of the argument a.
func (g *gen) argPath(a longArg) string {
	if a.index < 0 {
		return g.path(a.o) + a.field
	}
	return g.path(a.o) + a.field + "[" + strconv.Itoa(a.index) + "]"
}

// maxArgStrlen is Linux's MAX_ARG_STRLEN on machines with 4 KiB pages
// (32 pages): execve refuses an argument or environment string of that
// many bytes or more, its NUL included, with E2BIG. It is below
// units.MaxLineLen, so a command systemd loads can still never start.
const maxArgStrlen = 32 * 4096

// argStrlenRefusal says what happens to a string of maxArgStrlen bytes
// or more handed to a program.
const argStrlenRefusal = "Linux refuses to start a program with an argument or environment variable of 131072 bytes or more (MAX_ARG_STRLEN with 4 KiB pages: \"Argument list too long\")"

// checkLines refuses an entry that makes a line longer than systemd
// reads: it would not load the unit at all. The diagnostic points at what
// made the line long: the longest argument of a command, or the value.
func (g *gen) checkLines() {
	for _, s := range g.file.Sections {
		for _, e := range s.Entries {
			n := e.LineLen()
			if n <= units.MaxLineLen {
				continue
			}
			o := g.origin(e)
			path := g.path(o)
			var pos hooks.Position
			if i := slices.IndexFunc(g.longest, func(a longArg) bool { return a.e == e }); i >= 0 {
				path = g.argPath(g.longest[i])
				pos = g.b.spec.Where(path)
			} else {
				pos = g.where(o)
			}
			g.b.report(hooks.Error, pos, path,
				fmt.Sprintf("this makes %s= a line of %d bytes; systemd refuses a unit file line of %d bytes or more (LONG_LINE_MAX), and the unit would not load", e.Key, n, units.MaxLineLen+1),
				units.LongLineHint)
			g.ok = false
		}
	}
}
