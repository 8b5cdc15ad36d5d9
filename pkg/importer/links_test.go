package importer_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/importer"
)

// TestLinkOwnerOverwrite: a symbolic link's user, group and overwrite
// are fields of the spec's link, and import, render gives the config
// back; a hard link's owner, which a spec refuses (a hard link has none of
// its own), takes the link to the leftovers, from which the merge gives it
// back too.
func TestLinkOwnerOverwrite(t *testing.T) {
	data := `{"ignition": {"version": "3.4.0"}, "storage": {
  "files": [{"path": "/opt/t", "contents": {"source": "data:,t"}}],
  "links": [
    {"path": "/etc/a", "target": "/opt/a", "user": {"name": "www"}, "group": {"id": 33}, "overwrite": true},
    {"path": "/etc/h", "target": "/opt/t", "hard": true, "user": {"id": 5}}]}}`
	in := importer.Input{Name: "links.ign", Data: []byte(data)}
	got, want, res, diags := roundTrip(t, in, []byte(data))
	if res == nil {
		t.Fatal(diags.Error())
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("import, render --merge of the leftovers differs (-original +rendered):\n%s", d)
	}
	ls := res.Hooks[0].Links
	if len(ls) != 1 || ls[0] != (hooks.Link{Path: "/etc/a", Target: "/opt/a", User: "www", Group: "33", Overwrite: true}) {
		t.Errorf("links = %+v", ls)
	}
	// Ignition itself ignores a hard link's owner, and says so.
	if !slices.ContainsFunc(diags, func(d hooks.Diagnostic) bool {
		return d.Path == "storage.links[1]" && strings.HasPrefix(d.Message, importer.Leftovers) && strings.Contains(d.Message, "a hard link has no owner of its own")
	}) {
		t.Errorf("warnings:\n%s", diags.Error())
	}
}
