package hooks

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var backticked = regexp.MustCompile("`([A-Za-z]+)`")

// docTable is a fields table of the spec reference: the rows after a
// header line, each split into its cells.
type docTable [][]string

// readDocTables returns the tables of docs/spec.md whose header is
// header, in order.
func readDocTables(t *testing.T, header string) (tables []docTable, doc string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "spec.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc = string(data)
	var cur docTable
	in := false
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case strings.TrimSpace(line) == header:
			in, cur = true, nil
		case in && strings.HasPrefix(line, "|---"):
		case in && strings.HasPrefix(line, "|"):
			cells := strings.Split(strings.Trim(line, "|"), " | ")
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			cur = append(cur, cells)
		case in:
			tables, in = append(tables, cur), false
		}
	}
	return tables, doc
}

// checkTypedTable holds a table of the spec reference with a type column
// to the fields of k: each field is named once, with its type.
func checkTypedTable[T any](t *testing.T, table docTable, k *kind[T]) {
	t.Helper()
	var named []string
	for _, row := range table {
		for _, m := range backticked.FindAllStringSubmatch(row[0], -1) {
			key := m[1]
			named = append(named, key)
			i, ok := k.place[key]
			switch {
			case !ok:
				t.Errorf("docs/spec.md's table of %s fields has %s, which is not a field of a %s", k.name, key, k.name)
			case k.fields[i].typ != row[1]:
				t.Errorf("docs/spec.md says the %s field %s is of type %q, the schema %q", k.name, key, row[1], k.fields[i].typ)
			}
		}
	}
	slices.Sort(named)
	want := slices.Sorted(slices.Values(k.keys))
	if !slices.Equal(named, want) {
		t.Errorf("docs/spec.md's table of %s fields names\n %v\nthe schema has\n %v", k.name, named, want)
	}
}

// TestSpecDocFieldsTables: the spec reference's tables of the fields of a
// hook and of a file name each field of the schema once, with the type of
// the schema, and no other; the table of user and group fields names
// every field a user and a group have, and no other; its sentences on
// directories and links name every field of theirs; the types of steps
// and drop-ins name each of their fields.
func TestSpecDocFieldsTables(t *testing.T) {
	typed, doc := readDocTables(t, "| field | type | meaning |")
	if len(typed) != 2 {
		t.Fatalf("docs/spec.md has %d tables of fields with types, want 2: a hook's and a file's", len(typed))
	}
	checkTypedTable(t, typed[0], hookKind)
	checkTypedTable(t, typed[1], fileKind)
	for key, k := range map[string][]string{"steps": stepKind.keys, "dropins": dropinKind.keys} {
		typ := hookKind.fields[hookKind.place[key]].typ
		for _, f := range k {
			if !strings.Contains(typ, f) {
				t.Errorf("the type of %s, %q, does not name the field %s", key, typ, f)
			}
		}
	}

	accounts, _ := readDocTables(t, "| field | entry | meaning |")
	if len(accounts) != 1 {
		t.Fatalf("docs/spec.md has %d tables of user and group fields, want 1", len(accounts))
	}
	checkAccountsTable(t, accounts[0])

	for _, c := range []struct {
		start, end string
		keys       []string
	}{
		{"`directories` entries have", "; `links`", directoryKind.keys},
		{"`links` entries have", "\n\n", linkKind.keys},
	} {
		i := strings.Index(doc, c.start)
		if i < 0 {
			t.Fatalf("docs/spec.md does not say what %s", c.start)
		}
		sentence := doc[i:]
		sentence = sentence[:strings.Index(sentence, c.end)]
		for _, f := range c.keys {
			if !strings.Contains(sentence, "`"+f+"`") {
				t.Errorf("docs/spec.md's sentence %q… does not name %s:\n%s", c.start, f, sentence)
			}
		}
	}
}

// checkAccountsTable holds the table of user and group fields, whose
// second column says which entry has the field, to the schema.
func checkAccountsTable(t *testing.T, table docTable) {
	t.Helper()
	got := map[string][]string{}
	for _, row := range table {
		for _, m := range backticked.FindAllStringSubmatch(row[0], -1) {
			for _, e := range strings.Split(row[1], ", ") {
				got[e] = append(got[e], m[1])
			}
		}
	}
	for kind, want := range map[string][]string{"user": userKind.keys, "group": groupKind.keys} {
		g := slices.Clone(got[kind])
		slices.Sort(g)
		w := slices.Clone(want)
		slices.Sort(w)
		// The table writes the ids as one row: uid for users, gid for
		// groups.
		if kind == "user" {
			g = slices.DeleteFunc(g, func(s string) bool { return s == "gid" })
		} else {
			g = slices.DeleteFunc(g, func(s string) bool { return s == "uid" })
		}
		if !slices.Equal(g, w) {
			t.Errorf("docs/spec.md's table has the %s fields %v, the spec %v", kind, g, w)
		}
	}
}

// TestFieldSetIsEncoded: a field's set, which Hook.Generated asks
// without building a value, says what its encode says, for every field of
// a hook on every hook of the specs the goldens and examples are made from,
// on an empty hook, and on a hook whose lists and maps are empty but not nil.
func TestFieldSetIsEncoded(t *testing.T) {
	var specs []string
	for _, glob := range []string{"../../testdata/golden/*.yaml", "../../examples/*/*.yaml"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, m...)
	}
	hooks := []Hook{{}, {WantedBy: []string{}, Exec: []string{}, Pre: [][]string{}, Env: map[string]string{},
		Directives: map[string][]string{}, Steps: []Step{}, Files: []File{}}}
	for _, path := range specs {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if spec, diags := Parse(path, data); !diags.HasErrors(false) {
			hooks = append(hooks, spec.Hooks...)
		}
	}
	if len(hooks) < 20 {
		t.Fatalf("only %d hooks read from %d specs", len(hooks), len(specs))
	}
	set := map[string]bool{}
	for i := range hooks {
		for j := range hookKind.fields {
			f := &hookKind.fields[j]
			if got, want := f.isSet(&hooks[i]), f.encode(&hooks[i]) != nil; got != want {
				t.Errorf("hook %q, field %s: set %v, encoded %v", hooks[i].Name, f.key, got, want)
			}
			if f.isSet(&hooks[i]) {
				set[f.key] = true
			}
		}
	}
	// The specs must set the fields whose set is not a builder's, or the
	// test says nothing of them.
	for _, key := range []string{"wantedBy", "pre", "env", "directives", "steps", "exec", "description"} {
		if !set[key] {
			t.Errorf("no spec read sets %s", key)
		}
	}
}
