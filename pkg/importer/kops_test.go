package importer_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hostprov/hostprov/internal/corpus"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/importer"
	"github.com/hostprov/hostprov/pkg/kops"
)

// unitData is what a rendered unit puts on a machine.
type unitData struct {
	Name     string
	Contents string
	Enabled  *bool
	Mask     bool
	Dropins  []compile.Dropin
}

func unitsData(us []compile.Unit) []unitData {
	var out []unitData
	for _, u := range us {
		out = append(out, unitData{u.Name, string(u.Contents), u.Enabled, u.Mask, u.Dropins})
	}
	return out
}

// TestKopsRoundTrip: the spec imported from kops manifests renders the
// same units as render gives of the manifests themselves (render -f
// cluster.yaml [--instance-group NAME], without --compat kops), for the
// example's manifests, the kops input of testdata/in and every kops
// manifest of the corpus that render reads, for each of their
// InstanceGroups; the storage hook of file assets renders no unit.
func TestKopsRoundTrip(t *testing.T) {
	files := []string{filepath.Join("..", "..", "examples", "kops", "cluster.yaml"), filepath.Join("testdata", "in", "cluster.yaml")}
	if dir := corpus.Path("kops"); dirExists(dir) {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
				files = append(files, p)
			}
			return nil
		})
	} else {
		t.Logf("no kops corpus at %s: the example and testdata only", dir)
	}
	compared := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		data, _ = corpus.Strip(data)
		name := filepath.Base(file)
		ms, diags := kops.Read(name, data)
		if diags.HasErrors(false) || ms.Cluster == nil && len(ms.InstanceGroups) == 0 {
			continue
		}
		// Each machine: the only one, or each InstanceGroup's.
		groups := []string{""}
		if len(ms.InstanceGroups) > 1 {
			groups = nil
			for _, ig := range ms.InstanceGroups {
				groups = append(groups, ig.Name)
			}
		}
		for _, ig := range groups {
			nhs, diags := ms.Hooks("", ig)
			if diags.HasErrors(false) || len(nhs) == 0 {
				continue
			}
			rt := kops.Containerd
			for _, m := range append([]*kops.Manifest{ms.Cluster}, ms.InstanceGroups...) {
				if m != nil && m.ContainerRuntime == string(kops.Docker) {
					rt = kops.Docker
				}
			}
			want, diags := kops.Render(nhs, rt)
			if diags.HasErrors(false) {
				continue
			}
			t.Run(strings.TrimPrefix(file, corpus.Path())+"/"+ig, func(t *testing.T) {
				res, idiags := importer.Import(importer.Input{Name: name, Data: data, InstanceGroup: ig})
				if res == nil {
					t.Fatalf("import refused manifests that render reads:\n%s", idiags.Error())
				}
				r, bad := compile.Build(res.Name+".yaml", res.Spec, compile.Options{})
				if bad.HasErrors(false) {
					t.Fatal(bad.Error())
				}
				if d := cmp.Diff(unitsData(want), unitsData(r.Units)); d != "" {
					t.Errorf("the imported spec renders other units (-kops +imported):\n%s\nspec:\n%s", d, res.Spec)
				}
			})
			compared++
		}
	}
	t.Logf("%d machines of kops manifests compared", compared)
	if compared < 2 {
		t.Fatalf("only %d machines of kops manifests compared", compared)
	}
}

func dirExists(dir string) bool {
	st, err := os.Stat(dir)
	return err == nil && st.IsDir()
}
