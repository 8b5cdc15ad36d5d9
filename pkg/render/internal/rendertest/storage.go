package rendertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/pkg/compile"
)

// StorageDir returns the directory of the golden specs with files,
// directories and links, and of the files their local: entries name.
func StorageDir() string { return Path("testdata", "golden", "storage") }

// StorageGoldens are the specs of StorageDir by name, and the examples
// that have files, directories or links.
func StorageGoldens(t *testing.T) map[string]string {
	t.Helper()
	ms, err := filepath.Glob(filepath.Join(StorageDir(), "*.yaml"))
	if err != nil || len(ms) < 2 {
		t.Fatalf("found %d storage goldens (%v); the tests expect the ones in the repository", len(ms), err)
	}
	out := map[string]string{}
	for _, m := range ms {
		out[strings.TrimSuffix(filepath.Base(m), ".yaml")] = m
	}
	// The examples with files, directories or links are goldens too.
	ex, err := filepath.Glob(Path("examples", "*", "hostprov.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ex {
		data, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := compile.Build(m, data, compile.Options{}); !r.Storage.Empty() {
			out["examples/"+filepath.Base(filepath.Dir(m))] = m
		}
	}
	if _, ok := out["examples/node-metrics"]; !ok {
		t.Fatal("examples/node-metrics is not among the storage goldens")
	}
	return out
}
