package render

import (
	"strings"
	"testing"
)

// FuzzLiteralText holds literalText to the checks it stands for.
func FuzzLiteralText(f *testing.F) {
	for _, s := range []string{"", "a\n", "a \n", "a\t\n", "a\tb\n", "\x7f", "~", "é", "a\x01", " \n", "\t\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := printableASCII(s, true) && !strings.Contains(s, " \n") && !strings.Contains(s, "\t\n")
		if got := literalText(s); got != want {
			t.Errorf("literalText(%q) = %v, want %v", s, got, want)
		}
	})
}
