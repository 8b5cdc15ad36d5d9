package units

import (
	"bytes"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// meaning is what systemd makes of a file regardless of layout: per
// interaction class (see order.go), the ordered list of its entries, and
// per section the order of its barriers.
func meaning(f *File) map[string][]string {
	m := map[string][]string{}
	for _, s := range f.Sections {
		m["["+s.Name+"]"] = append(m["["+s.Name+"]"], []string(nil)...)
		for _, e := range s.Entries {
			class, ok := classOf[s.Name+"."+e.Key]
			if !ok {
				class = s.Name + "." + e.Key
			}
			m[class] = append(m[class], s.Name+"."+e.Key+"="+e.Value)
			if barrier(s.Name, e) {
				m["barriers of ["+s.Name+"]"] = append(m["barriers of ["+s.Name+"]"], e.Key+"="+e.Value)
			}
		}
	}
	return m
}

// comments returns all comment lines of f, sorted, as Canonical may move
// them between entries but must not lose or invent any.
func comments(f *File) []string {
	out := append([]string(nil), f.Header...)
	for _, s := range f.Sections {
		out = append(out, s.Comments...)
		for _, e := range s.Entries {
			out = append(out, e.Comments...)
		}
	}
	out = append(out, f.Trailer...)
	return out
}

func FuzzParseCanonical(f *testing.F) {
	for _, seed := range []string{
		realistic,
		"[Unit]\nA=1\n",
		"# h\n[Install]\nWantedBy=a\n# c\n[Unit]\nB=\\\n  x\n[Service]\nExecStart=\nExecStart=/bin/a\n# t\n",
		"[Service]\nA=x\\ \nB=y \\\n# c\n z\n",
		"\xef\xbb\xbf[Unit]\r\nA = 1\r\n[X-Foo]\rK=v\r",
		"[a]b]\nk=v\n[[c]\nx y=\n",
		"; only comments\n# here\n",
		"[Socket]\nListenStream=/a\nListenDatagram=\nAccept=no\nListenFIFO=/b\n[Service]\nStartLimitBurst=1\n[Unit]\nStartLimitBurst=2\n",
		"[Service]\nType=oneshot\nExecStart=/bin/echo %z\nExecStartPre=/bin/a\nUser=x:y\nFoo=1\nEnvironment=A=1\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// FormatAll reports what Format reports, among the rest, and
		// formats alike. Not always first: Format stops at the first
		// problem of the file's syntax before it checks the Exec lines,
		// and FormatAll puts every problem in line order.
		out, err := Format(data)
		outAll, errs := FormatAll(data)
		reported := err != nil && slices.ContainsFunc(errs, func(e *ParseError) bool { return e.Error() == err.Error() })
		if (err == nil) != (len(errs) == 0) || err != nil && !reported || !bytes.Equal(out, outAll) {
			t.Fatalf("Format: %v; FormatAll: %v, and outputs equal: %v\n%q", err, errs, bytes.Equal(out, outAll), data)
		}
		f1, err := Parse(data)
		if err != nil {
			return
		}
		c1 := f1.Canonical()
		if n := canonicalSize(f1); len(c1) > n {
			t.Fatalf("canonical output is %d bytes, more than the %d Canonical sizes its buffer for:\n%q", len(c1), n, c1)
		}
		f2, err := Parse(c1)
		if err != nil {
			t.Fatalf("canonical output does not parse: %v\n%q", err, c1)
		}
		if diff := cmp.Diff(meaning(f1), meaning(f2)); diff != "" {
			t.Fatalf("canonical output changed the meaning (-before +after):\n%s\n%q", diff, c1)
		}
		if diff := cmp.Diff(len(comments(f1)), len(comments(f2))); diff != "" {
			t.Fatalf("comments lost or invented:\n%s\n%q", diff, c1)
		}
		if c2 := f2.Canonical(); !bytes.Equal(c1, c2) {
			t.Fatalf("not idempotent:\n%q\n%q", c1, c2)
		}
	})
}
