package units

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFormatAll: every problem of a file is reported, in line order, each
// at its own line and column, without those that only follow from another
// (the entries after a malformed header are not "outside of any section").
func TestFormatAll(t *testing.T) {
	src := "Description=x\n" + // 1: before any section
		"[Unit]\n" +
		"no equals\n" + // 3
		"[Service\n" + // 4: malformed header
		"Foo=bar\n" + // 5: belongs to it, not reported
		"[Service]\n" +
		"ExecStart=@@/bin/x\n" + // 7: refused Exec line
		"A=b\x00c\n" + // 8: NUL
		"=v\n" + // 9: no key
		"Long=" + strings.Repeat("x", MaxLineLen) + "\n" + // 10: too long
		"X=continued \\\n" + // 11-12: joined, fine
		"  more\n" +
		"ExecStartPre=/bin/true %z\n" // 13: unknown specifier
	out, errs := FormatAll([]byte(src))
	if out != nil {
		t.Errorf("FormatAll gave output for a file with errors")
	}
	type at struct{ Line, Column int }
	var got []at
	for _, e := range errs {
		got = append(got, at{e.Line, e.Column})
	}
	want := []at{{1, 1}, {3, 1}, {4, 1}, {7, 12}, {8, 4}, {9, 1}, {10, MaxLineLen + 1}, {13, 24}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("FormatAll's errors at (-want +got):\n%s\n%v", diff, errs)
	}
	// Format reports the first of them, as it always did.
	if _, err := Format([]byte(src)); err == nil || err.Error() != errs[0].Error() {
		t.Errorf("Format: %v; want %v", err, errs[0])
	}
}

// TestFormatAllAgrees: on a file without errors FormatAll gives Format's
// bytes, and on one with a single error, Format's error.
func TestFormatAllAgrees(t *testing.T) {
	for i, src := range []string{
		"[Service]\nType = oneshot\nExecStart=/bin/true\n",
		"[Service]\nExecStart=/bin/true\nbroken\n",
		"[Service]\nExecStart=!!!/bin/true\n",
		"x=1\n",
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			want, werr := Format([]byte(src))
			got, errs := FormatAll([]byte(src))
			if !bytes.Equal(got, want) {
				t.Errorf("FormatAll = %q, Format = %q", got, want)
			}
			switch {
			case werr == nil && len(errs) > 0:
				t.Errorf("FormatAll: %v; Format: no error", errs)
			case werr != nil && (len(errs) != 1 || errs[0].Error() != werr.Error()):
				t.Errorf("FormatAll: %v; Format: %v", errs, werr)
			}
		})
	}
}

func TestNormalizeRaw(t *testing.T) {
	tests := map[string]string{
		"":                     "\n",
		"[Unit]":               "[Unit]\n",
		"[Unit]\r\nA=1\r\n":    "[Unit]\nA=1\n",
		"[Unit]\rA=1\r":        "[Unit]\nA=1\n",
		"[Unit]\nA=1\n\n\n":    "[Unit]\nA=1\n",
		" [Unit] \n\tA = 1 \n": " [Unit] \n\tA = 1 \n",
		"A=\"x\"\\\r\n  y\r\n": "A=\"x\"\\\n  y\n",
	}
	for in, want := range tests {
		if got := string(NormalizeRaw([]byte(in))); got != want {
			t.Errorf("NormalizeRaw(%q) = %q, want %q", in, got, want)
		}
	}
}
