package apply

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/pkg/compile"
)

// TestInstallChangeOfAUnitWithDropins: a change of a unit file's [Install]
// is told from a change of its body whatever else the unit has (drop-ins,
// owned files the spec no longer has), so the unit is disabled and enabled
// again for its new links, and not restarted, as its body is the same.
func TestInstallChangeOfAUnitWithDropins(t *testing.T) {
	const body = "[Service]\nExecStart=/bin/app\n"
	before := body + "[Install]\nWantedBy=multi-user.target\n"
	after := body + "[Install]\nWantedBy=timers.target\n"
	limits := compile.Dropin{Name: "10-limits.conf", Contents: []byte("[Service]\nLimitNOFILE=4096\n")}
	env := compile.Dropin{Name: "20-env.conf", Contents: []byte("[Service]\nEnvironment=A=1\n")}
	old := compile.Dropin{Name: "30-old.conf", Contents: []byte("[Service]\nNice=5\n")}
	reenable := []string{"disable app.service ([Install] changed)", "enable app.service ([Install] changed)"}
	cases := []struct {
		name    string
		applied []compile.Dropin // the drop-ins of the last apply
		wanted  []compile.Dropin // the spec's drop-ins now
		want    []string
	}{
		{"no drop-in", nil, nil, reenable},
		{"one drop-in, unchanged", []compile.Dropin{limits}, []compile.Dropin{limits}, reenable},
		{"two drop-ins, unchanged", []compile.Dropin{limits, env}, []compile.Dropin{limits, env}, reenable},
		{"a drop-in unchanged, one no longer in the spec", []compile.Dropin{limits, old}, []compile.Dropin{limits},
			append(reenable, "restart app.service (changed)")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newMemNode()
			su := &StateUnit{Name: "app.service", Hook: "app", Enabled: yes()}
			put := func(rel string, data []byte) {
				p := path.Join(DefaultUnitDir, rel)
				m.file(p, string(data), 0o644)
				su.Files = append(su.Files, StateFile{Path: rel, SHA256: hashOf(data), Inode: m.entries[p].ino})
			}
			put("app.service", []byte(before))
			for _, d := range c.applied {
				put("app.service.d/"+d.Name, d.Contents)
			}
			st := &State{Version: StateVersion, UnitDir: DefaultUnitDir, Units: []*StateUnit{su}}
			u := compile.Unit{Name: "app.service", Contents: []byte(after), Enabled: yes(), HookName: "app", Dropins: c.wanted}
			p := memPlan(t, m, []compile.Unit{u}, st)
			var got []string
			for _, a := range p.Actions {
				if a.Kind != ActReload { // one for every plan that writes a file
					got = append(got, fmt.Sprintf("%s %s (%s)", a.Kind, a.Unit, a.Reason))
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("actions but the reload:\n%s\nwant:\n%s\nfiles:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"), strings.Join(planFiles(p), "\n"))
			}
		})
	}
}
