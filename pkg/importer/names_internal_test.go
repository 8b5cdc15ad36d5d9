package importer

import (
	"strings"
	"testing"

	"github.com/hostprov/hostprov/pkg/hooks"
)

// TestNames: the spec is named after the file, the storage hook after
// the spec unless a unit hook has that name.
func TestNames(t *testing.T) {
	for file, want := range map[string]string{
		"node.bu": "node", "node.ign.json": "node", "user data.yaml": "user-data", "-": "imported", "": "imported",
		"/dir/.hidden.bu": "hidden", "...": "imported", strings.Repeat("a", 300) + ".bu": strings.Repeat("a", 200),
	} {
		if got := specName(file); got != want {
			t.Errorf("specName(%q) = %q, want %q", file, got, want)
		}
	}
	hs := []hooks.Hook{{Name: "app.service", UseRawName: true}, {Name: "app-storage"}}
	for set, want := range map[string]string{"app": "app-storage-storage", "web": "web", "x.mount": "x.mount-storage"} {
		if got := storageHookName(set, hs); got != want {
			t.Errorf("storageHookName(%q) = %q, want %q", set, got, want)
		}
	}
}
