package apply_test

import (
	"testing"

	"github.com/hostprov/hostprov/pkg/apply"
)

// A state of version 1 (no paths) is read, and one is written again
// while no path is recorded; a version 1 state with paths is refused, and
// so is one of version 1 or 2 with owners of sets, or of a version to come.
func TestStateVersions(t *testing.T) {
	st, err := apply.ParseState([]byte(`{"version": 1, "unitDir": "/etc/systemd/system", "units": []}`))
	if err != nil || st.Version != 1 {
		t.Fatalf("version 1: %v %+v", err, st)
	}
	if _, err := apply.ParseState([]byte(`{"version": 1, "units": [], "paths": [{"path": "/etc/a", "kind": "file"}]}`)); err == nil {
		t.Error("a version 1 state with paths was read")
	}
	for name, data := range map[string]string{
		"relative":       `{"version": 2, "units": [], "paths": [{"path": "etc/a", "kind": "file"}]}`,
		"unit-dir":       `{"version": 2, "units": [], "paths": [{"path": "/etc/systemd/system/x.service", "kind": "file"}]}`,
		"kind":           `{"version": 2, "units": [], "paths": [{"path": "/etc/a", "kind": "socket"}]}`,
		"twice":          `{"version": 2, "units": [], "paths": [{"path": "/etc/a", "kind": "file"}, {"path": "/etc/a", "kind": "file"}]}`,
		"version-4":      `{"version": 4, "units": []}`,
		"sets-version-2": `{"version": 2, "units": [], "sets": [{"name": "hosthooks.a", "owner": "agent"}]}`,
		"set-no-owner":   `{"version": 3, "units": [], "sets": [{"name": "hosthooks.a", "owner": ""}]}`,
		"set-twice":      `{"version": 3, "units": [], "sets": [{"name": "a", "owner": "agent"}, {"name": "a", "owner": "x"}]}`,
		"set-name":       `{"version": 3, "units": [], "sets": [{"name": "a/b", "owner": "agent"}]}`,
	} {
		if _, err := apply.ParseState([]byte(data)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
