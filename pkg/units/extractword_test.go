package units

import (
	"testing"
)

// extractWordCopying is extractWordMode as it was before plain words were
// returned without a copy: every word built byte by byte.
func extractWordCopying(s string, relax bool) (word, rest string, found bool, err error) {
	i := 0
	for i < len(s) && isWS(s[i]) {
		i++
	}
	if i == len(s) {
		return "", "", false, nil
	}
	b := make([]byte, 0, len(s)-i)
	var quote byte
	for {
		if i >= len(s) {
			if quote != 0 {
				return "", "", false, errUnbalanced
			}
			return string(b), "", true, nil
		}
		c := s[i]
		switch {
		case c == '\\':
			i++
			if i >= len(s) {
				if relax && quote == 0 {
					return string(append(b, '\\')), "", true, nil
				}
				if relax {
					return "", "", false, errUnbalanced
				}
				return "", "", false, errBadEscape
			}
			out, n, ok := cunescapeOne(s[i:])
			switch {
			case ok:
				b = append(b, out...)
				i += n
			case relax:
				b = append(b, '\\', s[i])
				i++
			default:
				return "", "", false, errBadEscape
			}
		case quote != 0:
			if c != quote {
				b = append(b, c)
			} else {
				quote = 0
			}
			i++
		case c == '\'' || c == '"':
			quote = c
			i++
		case isWS(c):
			for i < len(s) && isWS(s[i]) {
				i++
			}
			return string(b), s[i:], true, nil
		default:
			b = append(b, c)
			i++
		}
	}
}

// execSeeds are Exec*= values for the word-splitting tests.
var execSeeds = []string{
	"", " ", "/bin/true", "  /bin/echo  a   b ", "/bin/echo a\tb\n", "-/bin/false", "@/bin/sh sh -c x",
	"@/bin/sh", `/bin/echo "a b" 'c d' e\ f`, `/bin/echo "unterminated`, `/bin/echo a\`, `/bin/echo \q`,
	`/bin/echo a"b"c`, "/bin/a ; /bin/b", "/bin/a \\; b", "/bin/a ;", "; /bin/a", "/bin/echo $X $$Y ${Z} $ $-",
	":/bin/echo $", "/bin/echo 100%% %n", "%%/bin/x", "/bin/echo \\x41\\u00e9\\101", "+!/bin/x", "!!/bin/x y",
	`/bin/echo "a\"b"`, `/bin/x ''`, "relative/path x", "/dir/ x",
}

func TestExtractWordPlain(t *testing.T) {
	for _, s := range execSeeds {
		for _, relax := range []bool{false, true} {
			checkExtractWord(t, s, relax)
		}
	}
}

func checkExtractWord(t *testing.T, s string, relax bool) {
	t.Helper()
	w, r, f, err := extractWordMode(s, relax)
	ww, wr, wf, werr := extractWordCopying(s, relax)
	if w != ww || r != wr || f != wf || err != werr {
		t.Fatalf("extractWordMode(%q, %v) = %q, %q, %v, %v; want %q, %q, %v, %v", s, relax, w, r, f, err, ww, wr, wf, werr)
	}
}
