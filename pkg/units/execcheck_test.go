package units

import (
	"strings"
	"testing"
)

// ExecCheckCases are Exec*= values and whether systemd 252 loads them;
// the rig test loads each into the real systemd and checks the verdict.
var ExecCheckCases = []struct {
	Value string
	// Loads is whether systemd loads the unit: the value is valid, or
	// systemd ignores the line because of its "-" prefix.
	Loads bool
	// Offset and Msg are where CheckExec places the problem, and a part of
	// its message, for values that are not valid.
	Offset int
	Msg    string
}{
	{"/bin/echo x", true, 0, ""},
	{"", true, 0, ""},
	{"-/bin/echo", true, 0, ""},
	{"!!/bin/echo", true, 0, ""},
	{":@-/bin/echo x", true, 0, ""},
	{"-+:@/bin/echo x", true, 0, ""},
	{"/bin/echo 50%", true, 0, ""},
	{"/bin/echo %% %n %i %c %y %_ %!", true, 0, ""},
	{`/bin/echo "a\qb"`, true, 0, ""},
	{"echo x", true, 0, ""},
	{"@@/bin/echo x", false, 1, `prefix "@" is given twice`},
	{"-@@/bin/echo x", true, 2, `prefix "@" is given twice`},
	{"::/bin/echo", false, 1, `prefix ":" is given twice`},
	{"++/bin/echo", false, 1, `prefix "+" is given twice`},
	{"--/bin/echo", true, 1, `prefix "-" is given twice`},
	{"@@-/bin/echo x", false, 1, `prefix "@" is given twice`},
	{"+!/bin/echo", false, 1, `"+" and "!" cannot be combined`},
	{"!+/bin/echo", false, 1, `"+" and "!" cannot be combined`},
	{"!!+/bin/echo", false, 2, `"+" and "!" cannot be combined`},
	{"!!!/bin/echo", false, 2, `"!" is given more than twice`},
	{"@/bin/echo", false, 0, "argv[0]"},
	{"/bin/echo %z", false, 10, "%z is not a specifier systemd knows"},
	{"/bin/echo a %%%k", false, 14, "%k is not a specifier"},
	{"/bin/echo %0", false, 10, "%0 is not a specifier"},
	{"/bin/echo 'unterminated", false, 0, ""},
	{"-/bin/echo %z", true, 11, "%z is not a specifier"},
	// Several commands separated by a lone ";", as systemd's own
	// test-execute unit exec-basic.service has them; each command is
	// checked on its own, with its own prefixes.
	{"touch /tmp/a ; /bin/sh -c 'touch /tmp/b' ; touch /tmp/c", true, 0, ""},
	{"/bin/echo a \\; b ; /bin/echo c;d ';' \\;", true, 0, ""},
	{"; /bin/echo a ; ; /bin/echo b ;", true, 0, ""},
	{"/bin/echo a ;\t-@/bin/echo echo b ; :/bin/echo", true, 0, ""},
	{"/bin/echo a ; @/bin/echo", false, 14, "argv[0]"},
	{"/bin/echo a ; -@/bin/echo", true, 14, "argv[0]"},
	{"-/bin/echo a ; /bin/echo %z", false, 25, "%z is not a specifier"},
	{"/bin/echo a ; -/bin/echo %z", true, 25, "%z is not a specifier"},
	{"/bin/echo a ; ++/bin/x", false, 15, `prefix "+" is given twice`},
	{"/bin/echo a ; -+!/bin/x", true, 16, `"+" and "!" cannot be combined`},
	{"/bin/echo a ; bin/x", false, 14, "neither a valid executable name nor an absolute path"},
	{"/bin/echo a ; /bin/echo 'x", false, 24, "unbalanced quoting"},
	{"/bin/echo a ; -/bin/echo 'x", true, 25, "unbalanced quoting"},
	{"/bin/echo a ; '/bin/x", true, 14, "unbalanced quoting"},
	{"/bin/echo a ; -", true, 15, "only the prefix"},
	// "\;" is the argument ";" only after the program.
	{"/bin/echo a ; \\; /bin/echo", false, 14, "special characters"},
	{"/bin/echo a ; /bin/echo %z 'x", false, 24, "%z is not a specifier"},
	{"/bin/echo 'a ; /bin/echo' %z", false, 26, "%z is not a specifier"},
}

func TestCheckExec(t *testing.T) {
	for _, c := range ExecCheckCases {
		err := CheckExec(c.Value)
		if unitLoads(err) != c.Loads {
			t.Errorf("CheckExec(%q) = %v, want loads=%v", c.Value, err, c.Loads)
			continue
		}
		if err == nil || c.Msg == "" {
			if err == nil && c.Msg != "" {
				t.Errorf("CheckExec(%q) = nil, want %q", c.Value, c.Msg)
			}
			continue
		}
		ee := err.(*ExecError)
		if ee.Offset != c.Offset || !strings.Contains(ee.Msg, c.Msg) {
			t.Errorf("CheckExec(%q) = at %d %q, want at %d containing %q", c.Value, ee.Offset, ee.Msg, c.Offset, c.Msg)
		}
	}
}
