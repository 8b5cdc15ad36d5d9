package units

import (
	"fmt"
	"strings"
)

// specifierLetters are the letters and digits that systemd 252 accepts
// after '%' in a unit file, as the real systemd loads them; '%' followed
// by any other letter or digit makes an Exec*= line, and with it the whole
// unit, fail to load ("bad-setting").
const specifierLetters = "abcdfghijlmnopqrstuvwyABCEGHIJLMNPRSTUVWY"

// UnknownSpecifier returns the byte offset in s of the first '%' that
// systemd 252 would not expand, and the two characters there ("%z"); spec
// is empty when there is none. "%%" is a '%' written twice, not a
// specifier.
func UnknownSpecifier(s string) (offset int, spec string) {
	for i := 0; i+1 < len(s); i++ {
		if s[i] != '%' {
			continue
		}
		c := s[i+1]
		i++
		if c == '%' {
			continue
		}
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if alnum && strings.IndexByte(specifierLetters, c) < 0 {
			return i - 1, s[i-1 : i+1]
		}
	}
	return 0, ""
}

// ExecError is a reason systemd 252 refuses an Exec*= value; Offset is the
// byte offset in the value where the problem starts.
type ExecError struct {
	Offset int
	Msg    string
	// Ignored is true when the command carries the "-" prefix before the
	// problem: then systemd drops the line with a warning and loads the
	// rest of the unit, instead of refusing the whole unit.
	Ignored bool
}

func (e *ExecError) Error() string { return e.Msg }

// CheckExec reports, as an *ExecError, why systemd 252's config_parse_exec
// would refuse the value of an Exec*= line, which makes the whole unit fail
// to load (or, after a "-" prefix, drops the line; see ExecError.Ignored);
// it returns nil for a value systemd loads, and for an empty value (a
// reset). A value may hold several commands separated by a lone ";"
// word, as systemd reads it; each is checked as systemd checks it, in
// turn, and the first problem is reported. For each command it checks, as systemd
// does:
//
//   - the prefixes: each of "-", "@" and ":" at most once, "+" at most once,
//     "!" at most twice ("!!"), and never "+" with "!";
//   - with "@", that argv[0] follows the program;
//   - that every '%' starts "%%" or a specifier systemd knows;
//   - what SplitExec checks: quoting and the program name.
func CheckExec(value string) error {
	if err := checkExec(value); err != nil {
		return err
	}
	return nil
}

// checkPrefix checks the prefix characters that start a command, as
// config_parse_exec reads them: it stops at the first character it cannot
// take, which then becomes part of the program name and makes it invalid.
// It returns the offset of that character in prefix and why, or a negative
// offset when the prefixes are valid.
func checkPrefix(prefix string) (int, string) {
	// seen counts each prefix character, indexed as in prefixChars.
	const prefixChars = "-@:+!"
	var seen [len(prefixChars)]int
	count := func(c byte) int { return seen[strings.IndexByte(prefixChars, c)] }
	for i := 0; i < len(prefix); i++ {
		c := prefix[i]
		seen[strings.IndexByte(prefixChars, c)]++
		switch {
		case c == '!' && count('+') > 0, c == '+' && count('!') > 0:
			return i, "the prefixes \"+\" and \"!\" cannot be combined: \"+\" runs the command with full privileges, \"!\" with only the user switch lifted"
		case c == '!' && count(c) > 2:
			return i, "the prefix \"!\" is given more than twice; \"!!\" is the most systemd takes"
		case c != '!' && count(c) > 1:
			return i, fmt.Sprintf("the prefix %q is given twice; each prefix may appear only once", string(c))
		}
	}
	return -1, ""
}

// checkExec is CheckExec, with a nil *ExecError for a value that loads.
func checkExec(value string) *ExecError {
	for pos := 0; ; {
		c, next, err := nextExecCommand(value, pos, false)
		// systemd resolves specifiers word by word as it reads them: one
		// it does not know, before where reading failed, fails first.
		end := c.end
		if err != nil {
			end = err.Offset
		}
		if off, spec := UnknownSpecifier(value[c.start:end]); spec != "" {
			return &ExecError{Offset: c.start + off, Msg: fmt.Sprintf("%s is not a specifier systemd knows (write %%%s for a literal %s)", spec, spec, spec),
				Ignored: strings.IndexByte(c.prefix, '-') >= 0}
		}
		if err != nil {
			return err
		}
		if next < 0 {
			return nil
		}
		if strings.IndexByte(c.prefix, '@') >= 0 && c.words < 2 {
			return &ExecError{Offset: c.start, Msg: "with the prefix \"@\" the word after the program is argv[0], and there is none; add it, or drop the \"@\"",
				Ignored: strings.IndexByte(c.prefix, '-') >= 0}
		}
		pos = next
	}
}

// unitLoads reports whether systemd loads a unit whose Exec*= line gave err
// from CheckExec: the line is valid, or systemd ignores it.
func unitLoads(err error) bool {
	ee, ok := err.(*ExecError)
	return err == nil || ok && ee.Ignored
}
