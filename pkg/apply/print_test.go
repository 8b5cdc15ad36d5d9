package apply_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/internal/golden"
	"github.com/hostprov/hostprov/pkg/apply"
)

func TestPlanText(t *testing.T) {
	n := newNode(t)
	n.mustApply(twoHooks)
	var b bytes.Buffer
	changed := strings.Replace(twoHooks, "[/bin/echo, hello]", "[/bin/echo, bonjour]", 1)
	changed = strings.Replace(changed, "- name: prep\n  type: oneshot\n  exec: [/bin/true]\n", "- name: new\n  exec: [/bin/sleep, infinity]\n", 1)
	if err := n.plan(changed).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "plan.txt"), b.Bytes())
}

// TestPlanJSON checks the shape tools read: unit counts, files without the
// unchanged ones, actions in order.
func TestPlanJSON(t *testing.T) {
	n := newNode(t)
	n.mustApply(twoHooks)
	p := n.plan(strings.Replace(twoHooks, "[/bin/true]", "[/bin/false]", 1))
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var j apply.PlanJSON
	if err := json.Unmarshal(data, &j); err != nil {
		t.Fatal(err)
	}
	if j.Summary != (apply.PlanSummary{Change: 1, Changes: true}) || len(j.Files) != 1 || j.Files[0].Op != apply.OpChange ||
		len(j.Actions) != 2 || j.Actions[0].Kind != apply.ActReload || j.Actions[1].Kind != apply.ActRestart {
		t.Errorf("plan JSON: %s", data)
	}
}
