package compile

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/units"
)

// This file holds the warnings about text in structured values that
// hostprov passes as written although the author probably meant systemd
// to read it: a specifier in a template without specifiers: true, and a
// "$NAME-rest" word under expandEnv.

// specifierLetters are the letters systemd 252 expands after '%' in unit
// files (systemd.unit(5), "Specifiers").
const specifierLetters = "aAbBCdEfgGhHiIjJlLmMnNopPqsStTuUvVwWyY"

// structuredValue is one value of a structured field, which hostprov
// escapes unless the hook sets specifiers: true.
type structuredValue struct {
	path, value string
}

// structuredValues lists the hook's values that pass through esc,
// QuoteExec or QuoteEnv, with their paths in the spec.
func (g *gen) structuredValues() []structuredValue {
	h := g.h
	var vs []structuredValue
	add := func(field, v string) {
		if v != "" {
			vs = append(vs, structuredValue{g.p + "." + field, v})
		}
	}
	add("description", h.Description)
	for k, a := range h.Exec {
		add(fmt.Sprintf("exec[%d]", k), a)
	}
	for k, argv := range h.Pre {
		for j, a := range argv {
			add(fmt.Sprintf("pre[%d][%d]", k, j), a)
		}
	}
	for k, st := range h.Steps {
		for j, a := range st.Run {
			add(fmt.Sprintf("steps[%d].run[%d]", k, j), a)
		}
		add(fmt.Sprintf("steps[%d].sh", k), st.Sh)
	}
	for _, name := range sortedKeys(h.Env) {
		add("env."+name, h.Env[name])
	}
	add("environmentFile", h.EnvironmentFile)
	add("workingDirectory", h.WorkingDirectory)
	add("user", h.User)
	add("group", h.Group)
	add("stateDirectory", h.StateDirectory)
	add("logsDirectory", h.LogsDirectory)
	add("configurationDirectory", h.ConfigurationDirectory)
	return vs
}

// checkSpecifiers warns about a value of a template unit that holds what
// looks like a systemd specifier ("%i") while the hook does not say whether
// systemd is to expand specifiers: without specifiers: true hostprov
// writes it as "%%i", and the process gets the text "%i", not the instance
// the author of a template most likely meant. Saying specifiers: false
// keeps every "%" as written and silences the warning.
//
// Units that are not templates are not checked: a '%' in them is far more
// often part of a date format or a printf pattern (%H:%M, %s) than a
// specifier, and hostprov's default keeps such text as written, which is
// what those commands need; the instance specifiers that make a template
// useful mean nothing there.
//
// With specifiers: true, a '%' that starts no specifier systemd 252 knows
// ("%z") is an error: systemd refuses such an Exec*= line, and with it the
// whole unit, and no other value means it either.
func (g *gen) checkSpecifiers(name string) {
	if g.h.Specifiers {
		for _, v := range g.structuredValues() {
			off, spec := units.UnknownSpecifier(v.value)
			if spec == "" {
				continue
			}
			line, col := lineCol(v.value, off)
			g.b.report(hooks.Error, g.b.spec.PosInValue(v.path, line, col), v.path,
				fmt.Sprintf("%s is not a specifier systemd knows; with specifiers: true systemd would refuse it (and the whole unit, in a command)", spec),
				fmt.Sprintf("write %%%s for a literal %s", spec, spec))
			g.ok = false
		}
		return
	}
	if !strings.Contains(name, "@") || g.b.spec.Has(g.p+".specifiers") {
		return
	}
	for _, v := range g.structuredValues() {
		line, col, spec := findSpecifier(v.value)
		if spec == "" {
			continue
		}
		g.b.report(hooks.Warning, g.b.spec.PosInValue(v.path, line, col), v.path,
			fmt.Sprintf("%s looks like a systemd specifier, but the hook does not set specifiers, so %s is kept as text and systemd does not replace it", spec, spec),
			fmt.Sprintf("set specifiers: true to let systemd expand %s (then write %%%s for a literal %s), or specifiers: false to keep every %% as written", spec, spec, spec))
	}
}

// lineCol returns the line and column, counted from 1 in runes, of the
// byte offset off in v.
func lineCol(v string, off int) (line, col int) {
	line, start := 1, 0
	for i := 0; i < off; i++ {
		if v[i] == '\n' {
			line, start = line+1, i+1
		}
	}
	return line, utf8.RuneCountInString(v[start:off]) + 1
}

// findSpecifier returns the first specifier in v, and its line and column
// in v, counted from 1; spec is empty when v holds none. "%%" is a '%'
// written twice, as systemd reads it, not a specifier.
func findSpecifier(v string) (line, col int, spec string) {
	line, start := 1, 0
	for i := 0; i < len(v); i++ {
		switch {
		case v[i] == '\n':
			line, start = line+1, i+1
		case v[i] == '%' && i+1 < len(v) && v[i+1] == '%':
			i++
		case v[i] == '%' && i+1 < len(v) && strings.IndexByte(specifierLetters, v[i+1]) >= 0:
			return line, utf8.RuneCountInString(v[start:i]) + 1, v[i : i+2]
		}
	}
	return 0, 0, ""
}

// checkExpandWords warns, for a hook with expandEnv, about an argument
// such as "$FOO-bar": a shell would expand FOO there, but systemd takes a
// word that starts with '$' for a reference to the variable named by the
// whole rest, "FOO-bar", which cannot exist, and would drop the word.
// QuoteExec keeps it as the text "$FOO-bar" so that it is not lost, which
// is probably not what was meant either; "${FOO}-bar" is. Words whose rest
// starts with no variable name at all ("$", "$-", "$1") are plainly
// literal and pass without a warning. Scripts given with sh are left
// alone: the shell expands them.
func (g *gen) checkExpandWords() {
	if !g.h.ExpandEnv {
		return
	}
	for _, v := range g.structuredValues() {
		if strings.HasSuffix(v.path, ".sh") || strings.HasPrefix(v.path, g.p+".env.") || !strings.HasSuffix(v.path, "]") {
			continue
		}
		w := v.value
		if !units.ExpandDropped(w) {
			continue
		}
		n := 1
		for n < len(w) && (w[n] == '_' || w[n] >= 'a' && w[n] <= 'z' || w[n] >= 'A' && w[n] <= 'Z' || n > 1 && w[n] >= '0' && w[n] <= '9') {
			n++
		}
		if n == 1 {
			continue
		}
		name, rest := w[1:n], w[n:]
		g.b.report(hooks.Warning, g.b.spec.Where(v.path), v.path,
			fmt.Sprintf("%q is passed as written: systemd would read it as the variable %q, which cannot exist, and drop the argument", w, w[1:]),
			fmt.Sprintf("write \"${%s}%s\" for the value of %s followed by %q, or \"$$%s\" to say the text is meant", name, rest, name, rest, w[1:]))
	}
}
