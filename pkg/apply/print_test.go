package apply_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/internal/golden"
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
