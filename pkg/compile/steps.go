package compile

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/hostprov/hostprov/pkg/units"
)

// StepComment is the comment written before the ExecStart= line of each
// step of a command hook; status reads the step names back from it.
const StepComment = "# step: "

// steps adds a command hook's steps: one ExecStart= per step, run in order
// by a oneshot that stops at the first failure and then remains active,
// so that systemd keeps each command's exit status for status to read.
func (g *gen) steps() {
	h, s := g.h, units.SectionService
	if h.Type == "" {
		g.add(s, "Type", "oneshot", at(".steps"))
	}
	g.add(s, "RemainAfterExit", "yes", at(".steps"))
	for k, st := range h.Steps {
		argv := st.Run
		if argv == nil {
			// -e stops the script at the first command that fails, as the
			// steps stop at the first step that fails. The script is one
			// quoted argument, whatever it contains.
			argv = []string{"/bin/sh", "-ec", st.Sh}
		}
		argField, indexed := ".run", true
		if st.Run == nil {
			argField, indexed = ".sh", false
		}
		if e := g.exec("ExecStart", argv, item(".steps", k), argField, indexed); e != nil {
			e.Comments = []string{StepComment + st.Name}
		}
	}
}

// StepNames returns the names of a command hook's steps, in order, from
// its unit file: the "# step: NAME" comment before each ExecStart= line.
// A unit that is not a command hook has none.
func StepNames(contents []byte) []string {
	f, err := units.Parse(contents)
	if err != nil {
		return nil
	}
	var names []string
	for _, s := range f.Sections {
		if s.Name != units.SectionService {
			continue
		}
		for _, e := range s.Entries {
			if e.Key != "ExecStart" {
				continue
			}
			name := ""
			for _, c := range e.Comments {
				if strings.HasPrefix(c, StepComment) {
					name = strings.TrimPrefix(c, StepComment)
				}
			}
			if name == "" {
				return nil // a hand-written unit, not a command hook
			}
			names = append(names, name)
		}
	}
	return names
}

// StampDir is where a command hook that runs once records that it ran.
const StampDir = "/var/lib/hostprov/stamps"

// once makes a command hook run once per content: after its steps
// succeed it writes a stamp named by the hash of the rest of the unit, and
// it is skipped while that stamp exists. A changed hook has another hash,
// so it runs again; an unchanged one never does, on any boot.
func (g *gen) once() {
	sum := sha256.Sum256(g.file.Canonical())
	stamp := StampDir + "/" + stampName(UnitName(g.h)) + "." + hex.EncodeToString(sum[:8])
	o := at(".when")
	g.add(units.SectionUnit, "ConditionPathExists", "!"+stamp, o)
	// "+": the stamp is written with full privileges even when the steps
	// run as another user.
	for _, argv := range [][]string{{"/bin/mkdir", "-p", StampDir}, {"/bin/touch", stamp}} {
		v, err := units.QuoteExec(argv, false)
		if err != nil {
			g.b.errorf(g.path(o), "", "%v", err)
			g.ok = false
			return
		}
		g.add(units.SectionService, "ExecStartPost", "+"+v, o)
	}
}

// IsStamp reports whether name, a file name in StampDir, is one of the
// stamps the command hook of unit writes (for this or another content of
// the hook): the unit's stamp name, a dot and 16 lower-case hex digits.
func IsStamp(unit, name string) bool {
	rest, ok := strings.CutPrefix(name, stampName(unit)+".")
	if !ok || len(rest) != 16 {
		return false
	}
	for _, r := range rest {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// stampName keeps the characters of a unit name that are plain in a path.
func stampName(unit string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._@-", r) {
			return r
		}
		return '_'
	}, unit)
}
