package yamlnode

import (
	"bytes"
	"testing"
	"unicode/utf8"
)

// blockSafeRunes is BlockSafe as it was written first, rune by rune: the
// byte-by-byte BlockSafe must answer as it does.
func blockSafeRunes(b []byte) bool {
	if len(b) == 0 || b[0] == '\n' || b[0] == ' ' || b[0] == '\t' || !utf8.Valid(b) ||
		!bytes.HasSuffix(b, []byte("\n")) || bytes.HasSuffix(b, []byte("\n\n")) {
		return false
	}
	prev := rune(0)
	for _, r := range string(b) {
		switch {
		case r == '\n':
			if prev == ' ' || prev == '\t' {
				return false
			}
		case r == '\t':
		case r < 0x20, r == 0x7f, r == 0x85, r == 0x2028, r == 0x2029, r == 0xfeff:
			return false
		}
		prev = r
	}
	return true
}

func FuzzBlockSafe(f *testing.F) {
	for _, s := range []string{"", "\n", "a\n", "a \n", "a\t\n", "\ta\n", "a\n\n", "[Unit]\nDescription=é\n", "x\u0085\n",
		"x\u2028\n", "x\ufeff\n", "é \n", "é\t\nb\n", "\xff\n", "a\x7f\n", "a\x01\n", "日本\n語\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := BlockSafe(b), blockSafeRunes(b); got != want {
			t.Errorf("BlockSafe(%q) = %v, want %v", b, got, want)
		}
	})
}
