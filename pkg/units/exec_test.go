package units

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// nastyArgv are argument lists that have broken hand-rolled quoting.
var nastyArgv = [][]string{
	{"/bin/true"},
	{"/bin/echo", "hello world"},
	{"/bin/echo", "double \" quote"},
	{"/bin/echo", "single ' quote"},
	{"/bin/echo", `both ' and " quotes`},
	{"/bin/echo", `back\slash`},
	{"/bin/echo", `trailing backslash\`},
	{"/bin/echo", `\`},
	{"/bin/echo", `\\`},
	{"/bin/echo", "100%"},
	{"/bin/echo", "%n %i %%"},
	{"/bin/echo", "$HOME"},
	{"/bin/echo", "${HOME}"},
	{"/bin/echo", "$"},
	{"/bin/echo", "$$"},
	{"/bin/echo", "cost: $5"},
	{"/bin/echo", ";"},
	{"/bin/echo", ";", "/bin/rm", "-rf", "/"},
	{"/bin/echo", `\;`},
	{"/bin/echo", "a;", ";b", "a;b"},
	{"/bin/echo", ""},
	{"/bin/echo", "", "", "x", ""},
	{"/bin/echo", "Grüße", "🤠", "日本語"},
	{"/bin/echo", "tab\there"},
	{"/bin/echo", "new\nline"},
	{"/bin/echo", "cr\rhere", "bell\a", "del\x7f"},
	{"/bin/echo", "  leading and trailing  "},
	{"/bin/sh", "-c", `echo "$1" >> /var/log/x; test -f '/etc/a b' && exit 0`},
	{"/bin/sh", "-c", "for i in 1 2; do echo $i; done"},
	{"/usr/bin/env", "FOO=bar baz", "--opt='x y'"},
	{"/bin/echo", `\x41`, `\n`, `\u00e9`, `\s`},
	{"/bin/echo", "#notacomment", "=", "[Unit]"},
	{"/bin/echo", "invalid \xff utf8"},
	{"/opt/my app/bin/run", "x"},
	{"/opt/100%/run"},
	{"run-in-path", "--flag"},
	{"/bin/echo", "'", `"`, `''`, `""`},
	{"/bin/echo", "-", "@", ":", "+", "!"},
	{"/bin/echo", "a\\", "b"},
}

func TestQuoteExecRoundTrip(t *testing.T) {
	for _, argv := range nastyArgv {
		for _, expand := range []bool{false, true} {
			v, err := QuoteExec(argv, expand)
			if err != nil {
				t.Errorf("QuoteExec(%q, %v): %v", argv, expand, err)
				continue
			}
			if !utf8.ValidString(v) || strings.ContainsAny(v, "\n\r\x00") {
				t.Errorf("QuoteExec(%q) = %q is not one line of UTF-8", argv, v)
			}
			if expand && strings.Contains(strings.Join(argv, ""), "$") {
				// With expansion the '$' references are systemd's to resolve.
				continue
			}
			got, err := SplitExec(v)
			if err != nil {
				t.Errorf("SplitExec(%q): %v", v, err)
				continue
			}
			if diff := cmp.Diff(argv, got); diff != "" {
				t.Errorf("round trip of %q via %q (-want +got):\n%s", argv, v, diff)
			}
			// The value must also survive a unit file: Parse then split.
			f, err := Parse([]byte("[Service]\nExecStart=" + v + "\n"))
			if err != nil {
				t.Errorf("Parse of %q: %v", v, err)
				continue
			}
			if got := f.Values(SectionService, "ExecStart"); len(got) != 1 || got[0] != v {
				t.Errorf("value %q read back as %q", v, got)
			}
		}
	}
}

func TestQuoteExecForms(t *testing.T) {
	tests := []struct {
		argv   []string
		expand bool
		want   string
	}{
		{[]string{"/bin/true"}, false, "/bin/true"},
		{[]string{"/bin/echo", "a b"}, false, `"a b"`},
		{[]string{"/bin/echo", `say "hi"`}, false, `'say "hi"'`},
		{[]string{"/bin/echo", "it's"}, false, `"it's"`},
		{[]string{"/bin/echo", ""}, false, `""`},
		{[]string{"/bin/echo", ";"}, false, `";"`},
		{[]string{"/bin/echo", "50%"}, false, "50%%"},
		{[]string{"/bin/echo", "$HOME", "${X}"}, false, "$$HOME $${X}"},
		{[]string{"/bin/echo", "$HOME", "${X}"}, true, "$HOME ${X}"},
		// systemd would drop these as references to variables that
		// cannot exist; "$$" keeps them.
		{[]string{"/bin/echo", "$", "$-", "$FOO-bar", "$1", "$ x"}, true, `$$ $$- $$FOO-bar $$1 "$$ x"`},
		{[]string{"/bin/echo", "a$", "$$", "$$-", "${X}-y", "$_"}, true, "a$ $$ $$- ${X}-y $_"},
		// Inside a word systemd expands only ${X}: $X is written so.
		{[]string{"/bin/echo", "x$FOO", "a$$B$C_1.d", "${X}$Y", "${A$B}", "a$1$", "$$X$Y", "50%$P"}, true,
			"x${FOO} a$$B${C_1}.d ${X}${Y} ${A$B} a$1$ $$X${Y} 50%%${P}"},
		{[]string{"/bin/echo", "x$FOO"}, false, "x$$FOO"},
		{[]string{"/bin/echo", `a\b`}, false, `"a\\b"`},
		{[]string{"/bin/echo", "x\ty\x01"}, false, `"x\ty\x01"`},
		{[]string{"/bin/echo", "é"}, false, "é"},
	}
	for _, tt := range tests {
		got, err := QuoteExec(tt.argv, tt.expand)
		if err != nil {
			t.Errorf("QuoteExec(%q): %v", tt.argv, err)
			continue
		}
		want := tt.want
		if len(tt.argv) > 1 {
			want = tt.argv[0] + " " + tt.want
		}
		if got != want {
			t.Errorf("QuoteExec(%q, %v) = %q, want %q", tt.argv, tt.expand, got, want)
		}
	}
}

// TestQuoteExecExpandKeepsArguments checks that with expandEnv every
// argument that is not a reference to a variable arrives as written:
// "$" and the like must not be dropped by systemd.
func TestQuoteExecExpandKeepsArguments(t *testing.T) {
	argv := []string{"/bin/echo", "$", "$-", "a$", "$FOO-bar", "$1", "cost: $5", "$ x", "100%", "-", ""}
	v, err := QuoteExec(argv, true)
	if err != nil {
		t.Fatal(err)
	}
	got, err := SplitExec(v)
	if err != nil {
		t.Fatalf("SplitExec(%q): %v", v, err)
	}
	if diff := cmp.Diff(argv, got); diff != "" {
		t.Errorf("round trip via %q (-want +got):\n%s", v, diff)
	}
}

func TestQuoteExecErrors(t *testing.T) {
	bad := [][]string{
		nil, {""}, {"-/bin/true"}, {"@/bin/true"}, {":/bin/true"}, {"+/bin/true"}, {"!/bin/true"}, {"|/bin/true"},
		{";"}, {"/bin/a\"b"}, {"/bin/a'b"}, {`/bin/a\b`}, {"/bin/a\nb"}, {"/bin/"}, {"bin/true"}, {"./true"},
		{"/bin/$X"}, {"/bin/echo", "a\x00b"}, {"/bin/\xff"},
	}
	for _, argv := range bad {
		if v, err := QuoteExec(argv, false); err == nil {
			t.Errorf("QuoteExec(%q) = %q, want error", argv, v)
		}
	}
}

// TestSplitExecSystemd checks SplitExec against what systemd 252 itself
// made of these values (read from `systemd --test` unit dumps).
func TestSplitExecSystemd(t *testing.T) {
	tests := []struct {
		in   string
		want [][]string
	}{
		{`/bin/echo a    b "x  y" 'q"r' \; z\s ";" \x41\u00e9 100%% $$HOME $${X} e\q`,
			[][]string{{"/bin/echo", "a", "b", "x  y", `q"r`, ";", "z ", ";", "Aé", "100%", "$HOME", "${X}", `e\q`}}},
		{`/bin/echo 'a\'b' "tab\there" x\ y "" ; /bin/echo second`,
			[][]string{{"/bin/echo", "a'b", "tab\there", `x\ y`, ""}, {"/bin/echo", "second"}}},
		{`/bin/echo a"b c"d`, [][]string{{"/bin/echo", "ab cd"}}},
		{`-/bin/true`, [][]string{{"-/bin/true"}}},
		{`:/bin/echo $$x`, [][]string{{":/bin/echo", "$$x"}}},
		// A whole word "$" + something that is no variable name is a
		// reference to a variable that is never set: systemd drops it.
		{`/bin/echo $ $- "$" $FOO-bar $1 a$ $$- $X ${X} $$ %%`, [][]string{{"/bin/echo", "a$", "$-", "$X", "${X}", "$", "%"}}},
		{`:/bin/echo $ $-`, [][]string{{":/bin/echo", "$", "$-"}}},
		{`/bin/echo trailing\`, [][]string{{"/bin/echo", `trailing\`}}},
		{`; /bin/a ;`, [][]string{{"/bin/a"}}},
		{`touch /tmp/a ; /bin/sh -c 'touch /tmp/b' ; touch /tmp/c`, [][]string{{"touch", "/tmp/a"}, {"/bin/sh", "-c", "touch /tmp/b"}, {"touch", "/tmp/c"}}},
		{"/bin/a x;y \\; ';' \\\\; ;\t/bin/b \\;", [][]string{{"/bin/a", "x;y", ";", ";", `\;`}, {"/bin/b", ";"}}},
		{``, nil},
	}
	for _, tt := range tests {
		got, err := splitExecCommands(tt.in)
		if err != nil {
			t.Errorf("splitExecCommands(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("splitExecCommands(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
	for _, bad := range []string{`/bin/echo "open`, `/bin/echo 'x\`, `"" x`, `/bin/ x`, `bin/x`, `/bin/a ; /bin/b`, ``} {
		got, err := SplitExec(bad)
		if err == nil {
			t.Errorf("SplitExec(%q) = %q, want error", bad, got)
			continue
		}
		// The message reaches people who wrote a unit, not Go.
		if strings.Contains(err.Error(), "Split") {
			t.Errorf("SplitExec(%q): %v names a Go function", bad, err)
		}
	}
}

func TestQuoteEnv(t *testing.T) {
	tests := []struct{ name, value, want string }{
		{"A", "x", `"A=x"`},
		{"KUBELET_ARGS", "--a=1 --b='2'", `"KUBELET_ARGS=--a=1 --b='2'"`},
		{"Q", `say "hi" \o/`, `"Q=say \"hi\" \\o/"`},
		{"P", "100% $HOME", `"P=100%% $HOME"`},
		{"N", "a\nb\tc", `"N=a\nb\tc"`},
		{"_x1", "", `"_x1="`},
		{"U", "Grüße", `"U=Grüße"`},
	}
	for _, tt := range tests {
		got, err := QuoteEnv(tt.name, tt.value)
		if err != nil || got != tt.want {
			t.Errorf("QuoteEnv(%q, %q) = %q, %v; want %q", tt.name, tt.value, got, err, tt.want)
			continue
		}
		// systemd splits Environment= like an Exec word list, then expands
		// specifiers; the result must be exactly one NAME=value word.
		words, err := splitWords(got)
		if err != nil || len(words) != 1 || unescapeSpecifiers(words[0]) != tt.name+"="+tt.value {
			t.Errorf("QuoteEnv(%q, %q) = %q reads back as %q, %v", tt.name, tt.value, got, words, err)
		}
	}
	for _, bad := range [][2]string{{"", "x"}, {"1A", "x"}, {"A-B", "x"}, {"A B", "x"}, {"A", "\x01"}, {"A", "\xff"}, {"A", "\r"}} {
		if got, err := QuoteEnv(bad[0], bad[1]); err == nil {
			t.Errorf("QuoteEnv(%q, %q) = %q, want error", bad[0], bad[1], got)
		}
	}
	if !validEnvName("_") || !validEnvName("a1") || validEnvName("1a") || validEnvName("") || validEnvName("a.b") {
		t.Error("validEnvName")
	}
}

// splitWords splits like systemd's config_parse_environ: strict
// extract_first_word with EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE.
func splitWords(s string) ([]string, error) {
	var out []string
	for {
		w, rest, found, err := extractWordMode(s, false)
		if err != nil {
			return nil, err
		}
		if !found {
			return out, nil
		}
		out = append(out, w)
		s = rest
	}
}

func FuzzQuoteExec(f *testing.F) {
	for _, argv := range nastyArgv {
		f.Add(strings.Join(argv[1:], "\x1f"), false)
	}
	f.Add("", true)
	f.Fuzz(func(t *testing.T, args string, expand bool) {
		argv := append([]string{"/bin/prog"}, strings.Split(args, "\x1f")...)
		v, err := QuoteExec(argv, expand)
		if err != nil {
			if !strings.Contains(args, "\x00") {
				t.Fatalf("QuoteExec(%q): %v", argv, err)
			}
			return
		}
		if strings.ContainsAny(v, "\n\r") || !utf8.ValidString(v) {
			t.Fatalf("QuoteExec(%q) = %q is not one line of UTF-8", argv, v)
		}
		if expand && strings.Contains(args, "$") {
			return
		}
		got, err := SplitExec(v)
		if err != nil {
			t.Fatalf("SplitExec(%q): %v", v, err)
		}
		if diff := cmp.Diff(argv, got); diff != "" {
			t.Fatalf("round trip via %q (-want +got):\n%s", v, diff)
		}
	})
}

// checkCount holds the commands that nextExecCommand reads without
// building words (as CheckExec reads them) to those it reads building them:
// the same places, prefixes, errors and number of words.
func checkCount(t *testing.T, v string) {
	t.Helper()
	for pos := 0; ; {
		c, next, err := nextExecCommand(v, pos, false)
		k, knext, kerr := nextExecCommand(v, pos, true)
		if next != knext || (err == nil) != (kerr == nil) || err != nil && *err != *kerr ||
			c.start != k.start || c.end != k.end || c.prefix != k.prefix || c.words != len(k.argv) && kerr == nil {
			t.Fatalf("nextExecCommand(%q, %d) counting = %+v, %d, %v; building = %+v, %d, %v", v, pos, c, next, err, k, knext, kerr)
		}
		if next < 0 {
			return
		}
		pos = next
	}
}

func TestCountExec(t *testing.T) {
	for _, v := range execSeeds {
		checkCount(t, v)
	}
}

func FuzzCountExec(f *testing.F) {
	for _, v := range execSeeds {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		checkCount(t, v)
		checkExtractWord(t, v, false)
		checkExtractWord(t, v, true)
	})
}

// TestPathComponents checks the component checks of checkProgram and
// cleanAbsolute, which walk the path instead of splitting it.
func TestPathComponents(t *testing.T) {
	long := strings.Repeat("a", 256)
	for _, tc := range []struct {
		p          string
		programErr bool
		clean      bool
	}{
		{"/bin/true", false, true},
		{"/", true, true},
		{"//bin//true", false, true},
		{"/" + long, true, true},
		{"/a/" + long + "/b", true, true},
		{"/a/" + long[1:], false, true},
		{"/a/./b", false, false},
		{"/a/../b", false, false},
		{"/a/..", false, false},
		{"/.", false, false},
		{"/a/.b/c..", false, true},
		{"/a/b/", true, true},
	} {
		if err := checkProgram(tc.p); (err != nil) != tc.programErr {
			t.Errorf("checkProgram(%.40q) = %v, want error %v", tc.p, err, tc.programErr)
		}
		if got := cleanAbsolute(tc.p); got != tc.clean {
			t.Errorf("cleanAbsolute(%.40q) = %v, want %v", tc.p, got, tc.clean)
		}
	}
}
