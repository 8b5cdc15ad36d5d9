package units_test

// Real-systemd proof of the canonical order: every unit is loaded into
// systemd as written and as Format writes it, and every D-Bus property of
// both must be the same.

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hostprov/hostprov/internal/corpus"
	"github.com/hostprov/hostprov/internal/systemdtest"
	"github.com/hostprov/hostprov/pkg/units"
)

// extraUnitDirs are more directories of unit files to compare, such as a
// checkout of systemd's test/test-execute: go test -run FormatLoads -args
// -units.dir DIR -units.dir DIR2.
var extraUnitDirs dirList

type dirList []string

func (d *dirList) String() string     { return strings.Join(*d, ",") }
func (d *dirList) Set(v string) error { *d = append(*d, v); return nil }

func init() {
	flag.Var(&extraUnitDirs, "units.dir", "also compare the unit files under this directory (repeatable)")
}

// loadCase is one unit file to load under a name of the test's choosing.
type loadCase struct {
	from string // where the text comes from, for messages
	file string // the unit file name written into the rig
	load string // the unit loaded: file, or an instance of a template
	data []byte
}

// systemUnitDir is where distributions install their unit files; the test
// uses the ones of the machine it runs on when there are any.
const systemUnitDir = "/usr/lib/systemd/system"

// typeInterface is the D-Bus interface holding a unit type's own
// properties; types without one (target, device) are left out.
var typeInterface = map[string]string{
	"service": "Service", "socket": "Socket", "mount": "Mount", "automount": "Automount",
	"swap": "Swap", "timer": "Timer", "path": "Path", "slice": "Slice", "scope": "Scope",
}

// caseName gives a unit of another name a name in the test's namespace.
// Mount, automount and swap units must keep theirs, which systemd checks
// against their Where= and What=.
func caseName(prefix, name string) (file, load string) {
	switch units.Type(name) {
	case "mount", "automount", "swap":
		file = name
	default:
		file = prefix + name
	}
	load = file
	if i := strings.Index(file, "@."); i >= 0 {
		load = file[:i+1] + "x" + file[i+1:]
	}
	return file, load
}

func constructedCases() []loadCase {
	var cs []loadCase
	for i, c := range units.InteractionCases {
		typ := "target"
		for _, s := range []string{"Service", "Socket", "Timer", "Path"} {
			if strings.Contains(c.In, "["+s+"]") {
				typ = strings.ToLower(s)
				break
			}
		}
		name := fmt.Sprintf("hp-case%02d.%s", i, typ)
		cs = append(cs, loadCase{from: "constructed " + c.Name, file: name, load: name, data: []byte(c.In)})
	}
	return cs
}

// dirCases returns the unit files under dir (drop-ins loaded as services
// of their own), or nil when dir does not exist.
func dirCases(t *testing.T, dir, prefix string, strip bool, seen map[string]bool) []loadCase {
	t.Helper()
	if _, err := os.Stat(dir); err != nil {
		t.Logf("%s is not present: %v", dir, err)
		return nil
	}
	var cs []loadCase
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strip {
			data, _ = corpus.Strip(data)
		}
		name := d.Name()
		if strings.HasSuffix(filepath.Dir(path), ".d") {
			name = fmt.Sprintf("dropin%d.service", n)
		}
		if units.Type(name) == "" {
			return nil
		}
		n++
		file, load := caseName(fmt.Sprintf("%s%d-", prefix, n), name)
		if seen[file] {
			return nil
		}
		seen[file] = true
		rel, _ := filepath.Rel(dir, path)
		cs = append(cs, loadCase{from: rel, file: file, load: load, data: data})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d unit files from %s", len(cs), dir)
	return cs
}

// setProperties are the properties that systemd keeps in hash tables
// (dependencies by unit, RequiresMountsFor= by path, a unit's names,
// credentials by id): it reports them in hash order, which changes from one
// load to the next even for the same text, so they are compared as sets.
var setProperties = map[string]bool{}

func init() {
	for _, p := range strings.Fields(`Names Requires Requisite Wants BindsTo PartOf Upholds
		RequiredBy RequisiteOf WantedBy BoundBy UpheldBy ConsistsOf Conflicts ConflictedBy
		Before After OnSuccess OnSuccessOf OnFailure OnFailureOf Triggers TriggeredBy
		PropagatesReloadTo ReloadPropagatedFrom PropagatesStopTo StopPropagatedFrom
		JoinsNamespaceOf SliceOf RequiresMountsFor`) {
		setProperties["Unit."+p] = true
	}
	for _, iface := range []string{"Service", "Socket", "Mount", "Swap"} {
		for _, p := range []string{"LoadCredential", "LoadCredentialEncrypted", "SetCredential", "SetCredentialEncrypted"} {
			setProperties[iface+"."+p] = true
		}
	}
}

// asSet returns v, a D-Bus array, with its elements in a fixed order.
func asSet(v any) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice {
		return v
	}
	c := reflect.MakeSlice(rv.Type(), rv.Len(), rv.Len())
	reflect.Copy(c, rv)
	sort.SliceStable(c.Interface(), func(i, j int) bool {
		return fmt.Sprint(c.Index(i).Interface()) < fmt.Sprint(c.Index(j).Interface())
	})
	return c.Interface()
}

// record stores a property under its full name, sets in a fixed order.
func (p props) record(iface string, m map[string]any) {
	for k, v := range m {
		if setProperties[iface+"."+k] {
			v = asSet(v)
		}
		p[iface+"."+k] = v
	}
}

// props is what systemd reports for one unit: every property of its Unit
// interface and of its type's interface, by "Interface.Property", or the
// error of asking.
type props map[string]any

func loadAll(ctx context.Context, t *testing.T, r *systemdtest.Rig, cs []loadCase, text func(loadCase) []byte) []props {
	t.Helper()
	for _, c := range cs {
		if err := r.WriteUnit(c.file, text(c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Conn.ReloadContext(ctx); err != nil {
		t.Fatalf("daemon-reload: %v", err)
	}
	out := make([]props, len(cs))
	for i, c := range cs {
		p := props{}
		u, err := r.Conn.GetUnitPropertiesContext(ctx, c.load)
		if err != nil {
			p["error"] = err.Error()
		}
		p.record("Unit", u)
		if iface := typeInterface[units.Type(c.load)]; iface != "" {
			tp, err := r.Conn.GetUnitTypePropertiesContext(ctx, c.load, iface)
			if err != nil {
				p["error "+iface] = err.Error()
			}
			p.record(iface, tp)
		}
		out[i] = p
	}
	return out
}

func TestFormatLoadsTheSame(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	seen := map[string]bool{}
	all := constructedCases()
	all = append(all, dirCases(t, corpus.Path("units"), "hc", true, seen)...)
	all = append(all, dirCases(t, systemUnitDir, "hs", false, seen)...)
	for i, d := range extraUnitDirs {
		// corpus.Strip leaves a file without a provenance header as it is.
		all = append(all, dirCases(t, d, fmt.Sprintf("hx%d-", i), true, seen)...)
	}

	var cs []loadCase
	formatted := map[string][]byte{}
	refused := 0
	for _, c := range all {
		if _, err := units.Format(c.data); err != nil {
			// fmt refuses a unit systemd refuses; the canonical order
			// of what Parse reads is still compared.
			refused++
			t.Logf("%s: fmt refuses it: %v", c.from, err)
		}
		f, err := units.Parse(c.data)
		if err != nil {
			t.Logf("%s: not a unit file: %v", c.from, err)
			continue
		}
		out := f.Canonical()
		g, err := units.Parse(out)
		if err != nil || string(g.Canonical()) != string(out) {
			t.Errorf("%s: canonical form is not idempotent (%v)", c.from, err)
		}
		formatted[c.file] = out
		cs = append(cs, c)
	}

	r := systemdtest.Start(t)
	asWritten := func(c loadCase) []byte { return c.data }
	first := loadAll(ctx, t, r, cs, asWritten)
	second := loadAll(ctx, t, r, cs, asWritten)
	third := loadAll(ctx, t, r, cs, func(c loadCase) []byte { return formatted[c.file] })

	noise, diffs := 0, 0
	for i, c := range cs {
		keys := map[string]bool{}
		for _, p := range []props{first[i], second[i], third[i]} {
			for k := range p {
				keys[k] = true
			}
		}
		var names []string
		for k := range keys {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if !reflect.DeepEqual(first[i][k], second[i][k]) {
				// Loading the same text twice gives another value: it is
				// not a property of the text.
				noise++
				t.Logf("%s (%s): %s differs between two loads of the same text; not compared", c.from, c.load, k)
				continue
			}
			if !reflect.DeepEqual(second[i][k], third[i][k]) {
				diffs++
				t.Errorf("%s (%s): %s is %v as written and %v as formatted\n--- as written\n%s--- as formatted\n%s",
					c.from, c.load, k, second[i][k], third[i][k], c.data, formatted[c.file])
			}
		}
	}
	t.Logf("%d units compared (%d refused by fmt), %d property differences, %d noisy properties", len(cs), refused, diffs, noise)
	if len(cs) < len(units.InteractionCases) {
		t.Fatalf("only %d units compared", len(cs))
	}
}
