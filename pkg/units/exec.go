package units

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// execPrefixChars are the characters systemd reads as flags at the start of
// an Exec*= command ("-" ignore failure, "@" separate argv[0], ":" no
// environment expansion, "+" and "!" privilege handling, "|" shell in newer
// releases). A program name starting with one of them cannot be written.
const execPrefixChars = "-@:+!|"

// whitespace is systemd's WHITESPACE: the separators of extract_first_word
// and the characters strstrip removes.
const whitespace = " \t\n\r"

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// QuoteExec returns the value of an Exec*= line (ExecStart=, ExecStartPre=,
// ...) that systemd 252 splits back into exactly argv and runs with exactly
// these arguments.
//
// Words that need no quoting are written as they are. A word containing
// whitespace, a quote, a backslash, a control character or invalid UTF-8,
// an empty word, and a lone ";" (which systemd would take as a command
// separator) are quoted: in double quotes with C escapes (\" \\ \n \t \r,
// \xNN for other control bytes), or in single quotes when that is shorter.
// Every '%' is written as "%%" so that specifier expansion gives it back.
// Unless expandEnv is true every '$' is written as "$$", so that systemd's
// environment expansion at exec time gives it back; with expandEnv the
// caller's "$VAR" and "${VAR}" references are left for systemd to expand
// (note that systemd replaces a word that is exactly "$VAR" by the
// whitespace-split value of VAR, and drops it when VAR is unset), and "$$"
// is the caller's own escape for a '$'. A word that starts with '$' but
// whose rest is no variable name ("$", "$-", "$FOO-bar", "$1") is what
// systemd 252 would take for a whole-word reference to a variable that can
// never be set, and drop: its leading '$' is written as "$$", so that the
// word arrives as written (see ExpandDropped). Inside a word systemd 252
// expands only "${VAR}", and leaves "$VAR" as text, where a shell and the
// author expect its value: with expandEnv a "$VAR" that is not at the start
// of its word is written as "${VAR}" (see braceInWord).
//
// The result never starts with a prefix character, so a caller may prepend
// systemd's prefixes ("-", "+", ...) itself.
//
// It returns an error for an empty argv; for a NUL byte anywhere; and for a
// program (argv[0]) that systemd would not accept: empty, starting with one
// of "-@:+!|", the lone word ";", containing a quote, a backslash, a '$' or
// a control character, ending in '/', or neither an absolute path nor a
// plain file name.
func QuoteExec(argv []string, expandEnv bool) (string, error) {
	if len(argv) == 0 {
		return "", errors.New("the command is empty; give at least the program to run")
	}
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return "", fmt.Errorf("argument %d (%q) contains a NUL byte, which no systemd command line can carry", i, a)
		}
	}
	if err := checkProgram(argv[0]); err != nil {
		return "", err
	}
	if strings.IndexByte(argv[0], '$') >= 0 {
		// systemd runs the path as written but expands '$' in argv[0] at
		// exec time, so no spelling keeps both right.
		return "", fmt.Errorf("the program %q contains '$'; systemd does not expand variables in the program path, so give the path literally", argv[0])
	}
	// Room for the words as written, a separator and a pair of quotes
	// each, and a few escapes: grown once, not word by word.
	n := 8
	for _, a := range argv {
		n += len(a) + 3
	}
	var b strings.Builder
	b.Grow(n)
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		s := EscapeSpecifiers(a)
		switch {
		case !expandEnv:
			s = strings.ReplaceAll(s, "$", "$$")
		case ExpandDropped(a):
			s = "$" + s
		default:
			s = braceInWord(s)
		}
		quoteWord(&b, s)
	}
	return b.String(), nil
}

// braceInWord writes every "$NAME" of the word w that is not at its start
// as "${NAME}", NAME being the longest run of letters, digits and '_'
// after the '$' that does not start with a digit. systemd 252's
// replace_env expands "${NAME}" anywhere in a word, but "$NAME" only as a
// word of its own (replace_env_argv); inside a word it keeps it as text.
// "$$", the author's escape for a '$', stays, as does everything within
// "${...}", and a '$' followed by no name ("a$", "a$1", "a$-").
func braceInWord(w string) string {
	if len(w) < 2 || strings.IndexByte(w[1:], '$') < 0 {
		return w
	}
	var b strings.Builder
	b.Grow(len(w) + 8)
	for i := 0; i < len(w); {
		c := w[i]
		switch {
		case c != '$' || i+1 == len(w):
			b.WriteByte(c)
			i++
		case w[i+1] == '$':
			b.WriteString("$$")
			i += 2
		case w[i+1] == '{':
			end := strings.IndexByte(w[i:], '}')
			if end < 0 {
				end = len(w) - i - 1
			}
			b.WriteString(w[i : i+end+1])
			i += end + 1
		case i > 0 && isNameStart(w[i+1]):
			j := i + 2
			for j < len(w) && (isNameStart(w[j]) || w[j] >= '0' && w[j] <= '9') {
				j++
			}
			b.WriteString("${")
			b.WriteString(w[i+1 : j])
			b.WriteByte('}')
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

func isNameStart(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }

// ExpandDropped reports whether systemd 252, expanding the environment in
// a command line, would drop the word w whatever the environment holds.
// replace_env_argv (src/basic/env-util.c) takes a word that starts with
// '$', but not with "${" or "$$", for a whole-word reference: it replaces
// it by the split value of the variable named by the rest of the word, and
// drops it when that variable is unset. A rest that is not a valid variable
// name (empty, "-", "FOO-bar", "1") names a variable systemd never sets (it
// refuses such names in Environment=, EnvironmentFile= and its own
// environment), so the word is always lost.
func ExpandDropped(w string) bool {
	return strings.HasPrefix(w, "$") && !strings.HasPrefix(w, "${") && !strings.HasPrefix(w, "$$") && !validEnvName(w[1:])
}

// checkProgram applies the checks systemd's config_parse_exec makes on the
// executable, so QuoteExec refuses what systemd would refuse to load.
func checkProgram(p string) error {
	switch {
	case p == "":
		return errors.New("the program (argv[0]) is empty; give an absolute path such as \"/usr/bin/true\"")
	case strings.IndexByte(execPrefixChars, p[0]) >= 0:
		return fmt.Errorf("the program %q starts with %q, which systemd reads as a command prefix; give the program as an absolute path and set the behaviour the prefix stands for separately", p, p[:1])
	case p == ";":
		return errors.New("the program cannot be \";\", which systemd reads as a command separator")
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c < 0x20 || c == 0x7f || c == '"' || c == '\'' || c == '\\' {
			return fmt.Errorf("the program %q contains %q, which systemd refuses in an executable path (quotes, backslashes and control characters are not allowed there)", p, p[i:i+1])
		}
	}
	if !utf8.ValidString(p) {
		return fmt.Errorf("the program %q is not valid UTF-8, which systemd refuses in a unit file", p)
	}
	if strings.HasSuffix(p, "/") {
		return fmt.Errorf("the program %q ends in '/', so it names a directory; give the path of the executable", p)
	}
	if strings.HasPrefix(p, "/") {
		if len(p) >= 4096 {
			return fmt.Errorf("the program path is %d bytes long; paths must be shorter than 4096 bytes", len(p))
		}
		for rest := p; rest != ""; {
			c, after, _ := strings.Cut(rest, "/")
			if len(c) > 255 {
				return fmt.Errorf("the program path %q has a component longer than 255 bytes", p)
			}
			rest = after
		}
		return nil
	}
	if strings.IndexByte(p, '/') >= 0 || p == "." || p == ".." || len(p) > 255 {
		return fmt.Errorf("the program %q is neither an absolute path nor a plain file name; write it as an absolute path such as %q", p, "/"+strings.TrimPrefix(p, "./"))
	}
	return nil
}

// plainSafe reports whether s can be written as a bare word: non-empty,
// valid UTF-8, and free of separators, quotes, backslashes and control
// characters, and not the lone command separator ";".
func plainSafe(s string) bool {
	if s == "" || s == ";" || !utf8.ValidString(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == 0x7f || c == '"' || c == '\'' || c == '\\' {
			return false
		}
	}
	return true
}

// quoteWord writes s as one word of an Exec*= line.
func quoteWord(b *strings.Builder, s string) {
	if plainSafe(s) {
		b.WriteString(s)
		return
	}
	q := byte('"')
	if strings.Count(s, "'") < strings.Count(s, `"`) {
		q = '\''
	}
	b.WriteByte(q)
	cEscape(b, s, q)
	b.WriteByte(q)
}

// cEscape writes s with the C escapes systemd's cunescape understands, so
// that the text is valid UTF-8 on one line and unescapes to s exactly.
func cEscape(b *strings.Builder, s string, quote byte) {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				fmt.Fprintf(b, `\x%02x`, c)
			} else {
				b.WriteString(s[i : i+n])
			}
			i += n
			continue
		}
		switch {
		case c == quote || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
		i++
	}
}

// SplitExec splits the value of an Exec*= line into its words exactly as
// systemd 252 does, and applies the two unescapings that hostprov's own
// quoting relies on, so it is the inverse of QuoteExec and a test oracle
// for it:
//
//   - words are split and unquoted as extract_first_word does with
//     EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE, including its fallback of keeping
//     unknown escapes (and an unquoted trailing backslash) verbatim;
//   - a lone "\;" is the word ";";
//   - in each word "%%" becomes "%" (other specifiers such as %n need the
//     unit and are kept as written);
//   - "$$" becomes "$", as systemd's exec-time expansion does; variable
//     references ("$VAR" as a whole word, "${VAR}") are kept as written,
//     since their values are only known when the command runs. An
//     argument that systemd takes for a whole-word reference to a name no
//     variable can have ("$", "$-", "$FOO-bar"; see ExpandDropped) is left
//     out, as systemd always drops it. When the command carries the ':'
//     prefix systemd expands nothing, so neither does SplitExec.
//
// SplitExec only splits: prefix characters ("-", "@", ":", "+", "!") stay
// part of the first word. It returns an error for a value systemd would
// refuse (unbalanced quoting, an empty or unusable program), for an empty
// value (an empty Exec*= assignment is a reset, not a command), and for a
// value holding more than one command: systemd reads a lone ";" word as
// the end of a command, and "\;" as the argument ";".
func SplitExec(value string) ([]string, error) {
	cmds, err := splitExecCommands(value)
	if err != nil {
		return nil, err
	}
	switch len(cmds) {
	case 0:
		return nil, errors.New("the value is empty; an empty Exec assignment resets the list and holds no command")
	case 1:
		return cmds[0], nil
	}
	return nil, fmt.Errorf("the value holds %d commands separated by \" ; \"; write each command on an Exec line of its own", len(cmds))
}

// splitExecCommands is SplitExec for a value holding several commands, as
// systemd 252 reads them: a lone ";" word (unquoted, and followed by a
// blank or the end of the value) ends a command, a lone "\;" is the
// argument ";", and systemd runs the commands in turn as if each had a line
// of its own. A ";" that is part of a word ("a;b", "';'" after the program)
// separates nothing. It returns no commands for an empty value.
func splitExecCommands(value string) ([][]string, error) {
	var cmds [][]string
	for pos := 0; ; {
		c, next, err := nextExecCommand(value, pos, true)
		if err != nil {
			return nil, err
		}
		if next < 0 {
			return cmds, nil
		}
		cmds = append(cmds, c.argv)
		pos = next
	}
}

// execCommand is one command of an Exec*= value, as systemd 252's
// config_parse_exec reads it.
type execCommand struct {
	// start and end delimit the command's text in the value, from its
	// first word to the end of its last.
	start, end int
	// prefix is the run of prefix characters ("-", "@", ":", "+", "!")
	// that the unquoted first word starts with.
	prefix string
	// words is the number of words, the first included and dropped
	// references ("$-") left out.
	words int
	// argv is the words, when they are kept.
	argv []string
}

// nextExecCommand reads the command that starts at value[pos:], skipping
// separators before it. It returns next < 0 when no command is left, and
// else the offset where the next command may start. It builds the words
// only when keep is set. Its error is an *ExecError whose Ignored is set
// when the command carries the "-" prefix, as systemd then drops the rest
// of the line instead of refusing the unit.
func nextExecCommand(value string, pos int, keep bool) (c execCommand, next int, err *ExecError) {
	at := func(rest string) int { return len(value) - len(rest) }
	p := value[pos:]
	var first string
	for {
		p = strings.TrimLeft(p, whitespace)
		start := at(p)
		w, rest, found, err := extractWord(p)
		if err != nil {
			// systemd 252 gives up on the whole line, without refusing
			// the unit, when it cannot read the first word of a command.
			c.start = start
			return c, -1, &ExecError{Offset: start, Msg: err.Error(), Ignored: true}
		}
		if !found {
			return c, -1, nil
		}
		p = rest
		if w != ";" {
			first, c.start = w, start
			break
		}
	}
	c.prefix = first[:len(first)-len(strings.TrimLeft(first, "-@:+!"))]
	ignored := strings.IndexByte(c.prefix, '-') >= 0
	fail := func(off int, msg string) (execCommand, int, *ExecError) {
		return c, -1, &ExecError{Offset: off, Msg: msg, Ignored: ignored}
	}
	if i, msg := checkPrefix(c.prefix); i >= 0 {
		return c, -1, &ExecError{Offset: c.start + i, Msg: msg, Ignored: strings.IndexByte(c.prefix[:i], '-') >= 0}
	}
	if c.prefix != "" && c.prefix == first {
		return fail(c.start+len(first), fmt.Sprintf("the command is only the prefix %q, with no program", first))
	}
	if err := checkSplitProgram(first[len(c.prefix):]); err != nil {
		return fail(c.start+len(c.prefix), err.Error())
	}
	expand := strings.IndexByte(c.prefix, ':') < 0
	if keep {
		c.argv = []string{execWord(first, expand)}
	}
	c.words = 1
	c.end = c.start + len(strings.TrimRight(value[c.start:at(p)], whitespace))
	for p != "" {
		if p[0] == ';' && (len(p) == 1 || isWS(p[1])) {
			return c, at(p[1:]), nil
		}
		if strings.HasPrefix(p, `\;`) && (len(p) == 2 || isWS(p[2])) {
			if keep {
				c.argv = append(c.argv, ";")
			}
			c.words++
			c.end = at(p[2:])
			p = strings.TrimLeft(p[2:], whitespace)
			continue
		}
		start := at(p)
		w, rest, found, err := extractWord(p)
		if err != nil {
			return fail(start, err.Error())
		}
		if !found {
			break
		}
		c.end = start + len(strings.TrimRight(p[:len(p)-len(rest)], whitespace))
		p = rest
		// Only a word starting with '$' can be dropped, and unescaping
		// "%%" keeps a word's first byte.
		if expand && len(w) > 0 && w[0] == '$' && ExpandDropped(unescapeSpecifiers(w)) {
			continue
		}
		if keep {
			c.argv = append(c.argv, execWord(w, expand))
		}
		c.words++
	}
	return c, len(value), nil
}

// checkSplitProgram reports the program errors systemd reports when loading.
func checkSplitProgram(p string) error {
	p = unescapeSpecifiers(p)
	if p == "" {
		return errors.New("the command has an empty program name")
	}
	return checkProgramLoaded(p)
}

// checkProgramLoaded is the subset of checkProgram that systemd applies to
// the program after unquoting.
func checkProgramLoaded(p string) error {
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c < 0x20 || c == 0x7f || c == '"' || c == '\'' || c == '\\' {
			return fmt.Errorf("the program %q contains special characters", p)
		}
	}
	if strings.HasSuffix(p, "/") {
		return fmt.Errorf("the program %q names a directory", p)
	}
	if !strings.HasPrefix(p, "/") && (strings.IndexByte(p, '/') >= 0 || p == "." || p == "..") {
		return fmt.Errorf("the program %q is neither a valid executable name nor an absolute path", p)
	}
	return nil
}

// execWord applies specifier and "$$" unescaping to one split word.
func execWord(w string, expand bool) string {
	w = unescapeSpecifiers(w)
	if !expand || len(w) > 0 && w[0] == '$' && (len(w) == 1 || w[1] != '{' && w[1] != '$') {
		// A whole-word "$VAR" is replaced at exec time, not unescaped.
		return w
	}
	return unescapeDollars(w)
}

// unescapeSpecifiers turns "%%" into "%" and keeps every other specifier
// (and a trailing lone '%') as written, as systemd does for those it cannot
// resolve here.
func unescapeSpecifiers(s string) string {
	if !strings.Contains(s, "%%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte(s[i])
		if s[i] == '%' && i+1 < len(s) {
			i++
			if s[i] != '%' {
				b.WriteByte(s[i])
			}
		}
	}
	return b.String()
}

// unescapeDollars follows systemd's replace_env with no variables known:
// "$$" becomes "$", and "${NAME}" is kept as written (an unterminated "${"
// is literal anyway).
func unescapeDollars(s string) string {
	if !strings.Contains(s, "$$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			b.WriteString(s[i : i+2+end+1])
			i += 2 + end
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// validEnvName reports whether name is a valid environment variable name
// for systemd: [A-Za-z_][A-Za-z0-9_]*.
func validEnvName(name string) bool {
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// QuoteEnv returns the value of an Environment= line that systemd reads
// back as exactly the assignment name=value: the whole assignment in double
// quotes, with '"' and '\' backslash-escaped, a newline as \n, and '%' as
// "%%" (systemd expands specifiers in Environment=; it does not expand '$'
// there, so '$' is written as is). Newlines and tabs are written as \n and
// \t; systemd 252 accepts both in values.
//
// It returns an error when name is not a valid variable name, when value
// is not valid UTF-8, and when value holds any other control character:
// systemd ignores such an assignment with only a warning.
func QuoteEnv(name, value string) (string, error) {
	if !validEnvName(name) {
		return "", fmt.Errorf("%q is not a valid environment variable name; use letters, digits and '_', not starting with a digit", name)
	}
	if !utf8.ValidString(value) {
		return "", fmt.Errorf("the value of %s is not valid UTF-8, which systemd refuses in environment variables", name)
	}
	for i := 0; i < len(value); i++ {
		if c := value[i]; c != '\n' && c != '\t' && (c < 0x20 || c == 0x7f) {
			return "", fmt.Errorf("the value of %s contains the control character %q, which systemd refuses in environment variables", name, value[i:i+1])
		}
	}
	var b strings.Builder
	b.Grow(len(name) + len(value) + 8)
	b.WriteByte('"')
	b.WriteString(name)
	b.WriteByte('=')
	cEscape(&b, EscapeSpecifiers(value), '"')
	b.WriteByte('"')
	return b.String(), nil
}
