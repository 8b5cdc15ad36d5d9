package units

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// kv flattens a File to "Section/Key=Value" strings in file order, the
// shape most parse tests want to compare.
func kv(f *File) []string {
	var out []string
	for _, s := range f.Sections {
		for _, e := range s.Entries {
			out = append(out, s.Name+"/"+e.Key+"="+e.Value)
		}
	}
	return out
}

func TestValidate(t *testing.T) {
	bad := []func(f *File){
		func(f *File) { f.AddSection("Bad]") },
		func(f *File) { f.AddSection("Unit").Add("", "x") },
		func(f *File) { f.AddSection("Unit").Add("#A", "x") },
		func(f *File) { f.AddSection("Unit").Add("A=B", "x") },
		func(f *File) { f.AddSection("Unit").Add("A", " x") },
		func(f *File) { f.AddSection("Unit").Add("A", "\xff") },
		func(f *File) { f.Header = []string{"no hash"} },
		func(f *File) { f.AddSection("Unit").Add("A", "x").Comments = []string{"# a\n# b"} },
	}
	for i, mod := range bad {
		f := &File{}
		mod(f)
		if f.Validate() == nil {
			t.Errorf("case %d: Validate accepted %#v", i, f)
		}
	}
}

func TestValues(t *testing.T) {
	f, err := Parse([]byte("[Service]\nExecStart=\nExecStart=/a\n[Unit]\nExecStart=/u\n[Service]\nExecStart=/b\n"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"", "/a", "/b"}, f.Values("Service", "ExecStart")); diff != "" {
		t.Error(diff)
	}
	if f.Section("Socket") != nil || f.Section("Unit") == nil {
		t.Error("Section lookup wrong")
	}
}

// TestLineLen checks that LineLen is the length of the line Canonical
// writes for an entry, for values that Canonical changes on the way.
func TestLineLen(t *testing.T) {
	f := &File{}
	s := f.AddSection(SectionService)
	for _, v := range []string{"", "/bin/true", `/bin/echo a\`, `/bin/echo a\\`, "a\nb\\", "a\\\n", "x\x00y"} {
		s.Add("ExecStart", v)
	}
	lines := strings.Split(strings.TrimSuffix(string(f.Canonical()), "\n"), "\n")[1:]
	if len(lines) != len(s.Entries) {
		t.Fatalf("%d lines for %d entries:\n%s", len(lines), len(s.Entries), f.Canonical())
	}
	for i, e := range s.Entries {
		if got, want := e.LineLen(), len(lines[i]); got != want {
			t.Errorf("LineLen of ExecStart=%q is %d, but Canonical writes %q, %d bytes", e.Value, got, lines[i], want)
		}
	}
}
