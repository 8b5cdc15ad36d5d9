package units

import (
	"bytes"
	"sort"
	"testing"
)

// canonicalByMap is Canonical as it was before the sections were merged
// into one array of entries: merged with a map, and each section's
// entries copied once more to be sorted. Canonical must give its bytes.
func canonicalByMap(f *File) []byte {
	type merged struct {
		name     string
		comments []string
		entries  []*Entry
	}
	var order []*merged
	byName := map[string]*merged{}
	keep := keepSectionOrder(f)
	for _, s := range f.Sections {
		m := byName[s.Name]
		if m == nil || keep {
			m = &merged{name: s.Name}
			byName[s.Name] = m
			order = append(order, m)
		}
		m.comments = append(m.comments, s.Comments...)
		m.entries = append(m.entries, s.Entries...)
	}
	if !keep {
		sort.SliceStable(order, func(i, j int) bool {
			ri, rj := sectionRank(order[i].name), sectionRank(order[j].name)
			if ri != rj {
				return ri < rj
			}
			return ri == 10 && order[i].name < order[j].name
		})
	}

	// The buffer is sized once, for at most what is written, so that
	// the unit's bytes are not copied as it grows and a caller that keeps
	// many units does not keep buffers twice their size.
	var b bytes.Buffer
	b.Grow(canonicalSize(f))
	writeComments := func(cs []string) {
		for _, c := range cs {
			c = oneLine(c)
			if c == "" || c[0] != '#' && c[0] != ';' {
				c = "# " + c
			}
			b.WriteString(c)
			b.WriteByte('\n')
		}
	}
	writeComments(f.Header)
	for i, m := range order {
		if i > 0 {
			b.WriteByte('\n')
		}
		writeComments(m.comments)
		b.WriteByte('[')
		b.WriteString(oneLine(m.name))
		b.WriteString("]\n")
		entries := append([]*Entry(nil), m.entries...)
		sortEntries(m.name, entries, !keep, nil)
		for _, e := range entries {
			writeComments(e.Comments)
			b.WriteString(oneLine(e.Key))
			b.WriteByte('=')
			v := oneLine(e.Value)
			b.WriteString(v)
			if endsEscaped(v) {
				b.WriteByte(' ')
			}
			b.WriteByte('\n')
		}
	}
	writeComments(f.Trailer)
	return b.Bytes()
}

// canonicalSeeds are files whose sections merge, repeat, and keep their
// order, for TestCanonicalMerge.
var canonicalSeeds = []string{
	"",
	"# only\n",
	"[Install]\nWantedBy=a\n[Unit]\nDescription=x\n[Service]\nExecStart=/bin/a\n",
	"# h\n[Unit]\nA=1\n# c1\n[Service]\nB=2\n# c2\n[Unit]\nC=3\n[X-B]\nK=1\n[X-A]\nK=2\n[Unit]\n# t\n",
	"[Service]\nExecStart=/bin/echo %z\n[Unit]\nA=1\n[Service]\nNice=1\n[Unit]\nB=2\n",
	"[Service]\nStartLimitBurst=1\n[Unit]\nStartLimitBurst=2\n[Service]\nType=oneshot\n",
	"[Unit]\n[Unit]\n[Service]\n[Service]\nA=1\n",
	"[Timer]\nOnCalendar=daily\nOnBootSec=5\n[Path]\nPathExists=/a\n[Socket]\nListenStream=1\n[Mount]\nWhat=/a\n[Swap]\nWhat=/b\n[Slice]\n[Scope]\n[Automount]\nWhere=/c\n[Unit]\nZ=1\nA=1\n",
}

func TestCanonicalMerge(t *testing.T) {
	seeds := append([]string{realistic}, canonicalSeeds...)
	// Many sections, for the merge by map.
	var many bytes.Buffer
	for i := 0; i < 40; i++ {
		many.WriteString("[X-" + string(rune('A'+i%7)) + "]\nK" + string(rune('a'+i%5)) + "=1\n[Unit]\nA=1\n")
	}
	seeds = append(seeds, many.String())
	for _, seed := range seeds {
		f, err := Parse([]byte(seed))
		if err != nil {
			t.Fatalf("%q: %v", seed, err)
		}
		if got, want := f.Canonical(), canonicalByMap(f); !bytes.Equal(got, want) {
			t.Errorf("Canonical(%q) =\n%s\nwant\n%s", seed, got, want)
		}
	}
}

func FuzzCanonicalMerge(f *testing.F) {
	for _, seed := range canonicalSeeds {
		f.Add([]byte(seed))
	}
	f.Add([]byte(realistic))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			return
		}
		if got, want := file.Canonical(), canonicalByMap(file); !bytes.Equal(got, want) {
			t.Fatalf("Canonical(%q) =\n%q\nwant\n%q", data, got, want)
		}
	})
}
