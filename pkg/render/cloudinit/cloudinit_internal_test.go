package cloudinit

import (
	"bytes"
	"testing"

	"github.com/hostprov/hostprov/internal/benchspec"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render/internal/yamlwrite"
)

// TestCloudInitWrittenFast holds the cloud-init output of the benchmark's
// spec to the fast YAML writer: were it left to yaml.v3, the output would
// still be right, and three times slower.
func TestCloudInitWrittenFast(t *testing.T) {
	r, _ := compile.Build("benchspec", benchspec.Spec(40), compile.Options{})
	doc, err := configDoc(r.Units, Options{Storage: r.Storage})
	if err != nil {
		t.Fatal(err)
	}
	if !yamlwrite.WriteFast(&bytes.Buffer{}, doc) {
		t.Error("WriteFast does not write the cloud-init output of the benchmark's spec")
	}
}
