// Package deploytest reads what `kubectl apply -k deploy/` installs, for the
// tests of the deployment: the kustomization's resources, as objects, with
// its image setting applied.
//
// Load reads deploy/ itself, file by file, keeping each document as
// written, for the tests of what the files say. It interprets only what
// deploy/kustomization.yaml uses (a list of resource files and an images
// setting), and refuses any other field, so that a kustomization that
// grows a feature Load does not apply fails the tests instead of being
// applied wrongly.
//
// Build runs kustomize itself, for the overlays users write on deploy/
// (namespace:, namePrefix:): which fields kustomize rewrites there and
// which it leaves is kustomize's behaviour, not something to restate here.
package deploytest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Kustomization is the part of a kustomization.yaml that deploy/ uses.
type Kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	// Configurations are kustomize's transformer configurations: where
	// it writes namespaces and names that it does not know of itself.
	Configurations []string `json:"configurations,omitempty"`
	Images         []Image  `json:"images,omitempty"`
}

// Image is one entry of a kustomization's images: containers whose image
// is Name (with any tag or digest) get NewName (Name when empty) with
// NewTag, or with Digest.
type Image struct {
	Name    string `json:"name"`
	NewName string `json:"newName,omitempty"`
	NewTag  string `json:"newTag,omitempty"`
	Digest  string `json:"digest,omitempty"`
}

// Ref is the image reference that a container whose image is Name with
// suffix (its ":TAG" or "@DIGEST", or "") gets: NewTag or Digest replace
// the suffix, and without them it is kept.
func (im Image) Ref(suffix string) string {
	ref := im.NewName
	if ref == "" {
		ref = im.Name
	}
	switch {
	case im.Digest != "":
		return ref + "@" + im.Digest
	case im.NewTag != "":
		return ref + ":" + im.NewTag
	}
	return ref + suffix
}

// ReadKustomization reads dir/kustomization.yaml. A field other than those
// of Kustomization is an error, and so is a resource that is not a file
// inside dir (a directory, a remote base, a path out of dir).
func ReadKustomization(dir string) (*Kustomization, error) {
	p := filepath.Join(dir, "kustomization.yaml")
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var k Kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		return nil, fmt.Errorf("%s: %w (deploytest reads only resources, configurations and images)", p, err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		return nil, fmt.Errorf("%s: %s %s, want a kustomize.config.k8s.io/v1beta1 Kustomization", p, k.APIVersion, k.Kind)
	}
	for _, r := range slices.Concat(k.Resources, k.Configurations) {
		if !filepath.IsLocal(r) || strings.Contains(r, "://") {
			return nil, fmt.Errorf("%s: resource %q is not a path inside %s", p, r, dir)
		}
		fi, err := os.Stat(filepath.Join(dir, r))
		if err != nil {
			return nil, fmt.Errorf("%s: resource %q: %w", p, r, err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s: resource %q is not a file", p, r)
		}
	}
	for _, im := range k.Images {
		if im.Name == "" || (im.NewTag != "" && im.Digest != "") {
			return nil, fmt.Errorf("%s: image %+v: want a name and at most one of newTag and digest", p, im)
		}
	}
	return &k, nil
}

// Object is one object of a resource file.
type Object struct {
	// File is the resource file, relative to the kustomization's
	// directory, and Doc the object's place in it (0 for the first). For
	// Build, File is the kustomization's directory and Doc the object's
	// place in kustomize's output.
	File string
	Doc  int
	// Raw is the document as written, and Obj the object with the
	// kustomization's images set.
	Raw []byte
	Obj *unstructured.Unstructured
}

func (o Object) String() string {
	return fmt.Sprintf("%s#%d (%s %s)", o.File, o.Doc, o.Obj.GetKind(), o.Obj.GetName())
}

// Load reads the kustomization in dir and returns every object of its
// resources, in the order listed, as kustomize builds them: with the
// images set. An empty document is skipped; a document without apiVersion,
// kind or name is an error.
func Load(dir string) (*Kustomization, []Object, error) {
	k, err := ReadKustomization(dir)
	if err != nil {
		return nil, nil, err
	}
	var objs []Object
	for _, r := range k.Resources {
		data, err := os.ReadFile(filepath.Join(dir, r))
		if err != nil {
			return nil, nil, err
		}
		docs, err := splitDocs(data)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", r, err)
		}
		for i, doc := range docs {
			var m map[string]any
			if err := yaml.Unmarshal(doc, &m); err != nil {
				return nil, nil, fmt.Errorf("%s#%d: %w", r, i, err)
			}
			if m == nil {
				continue
			}
			u := &unstructured.Unstructured{Object: m}
			if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
				return nil, nil, fmt.Errorf("%s#%d: an object needs apiVersion, kind and metadata.name", r, i)
			}
			setImages(m, k.Images)
			objs = append(objs, Object{File: r, Doc: i, Raw: doc, Obj: u})
		}
	}
	return k, objs, nil
}

// Build builds the kustomization in dir with kustomize, as `kubectl apply
// -k` does, and returns its objects in kustomize's order. Raw is each
// object as kustomize writes it.
func Build(dir string) ([]Object, error) {
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var objs []Object
	for i, r := range m.Resources() {
		raw, err := r.AsYAML()
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %s: %w", dir, r.CurId(), err)
		}
		obj, err := r.Map()
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %s: %w", dir, r.CurId(), err)
		}
		objs = append(objs, Object{File: dir, Doc: i, Raw: raw, Obj: &unstructured.Unstructured{Object: obj}})
	}
	return objs, nil
}

// splitDocs splits a YAML stream into its documents.
func splitDocs(data []byte) ([][]byte, error) {
	rd := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, doc)
	}
}

// setImages sets the image of every container (and init container) found
// anywhere in obj whose image is one of images' names, with or without a
// tag or digest, as kustomize's image transformer does.
func setImages(obj any, images []Image) {
	switch v := obj.(type) {
	case map[string]any:
		for key, val := range v {
			if key == "containers" || key == "initContainers" || key == "ephemeralContainers" {
				if list, ok := val.([]any); ok {
					for _, c := range list {
						if c, ok := c.(map[string]any); ok {
							if img, ok := c["image"].(string); ok {
								c["image"] = resolveImage(img, images)
							}
						}
					}
				}
			}
			setImages(val, images)
		}
	case []any:
		for _, val := range v {
			setImages(val, images)
		}
	}
}

func resolveImage(img string, images []Image) string {
	name := img
	if i := strings.Index(name, "@"); i >= 0 {
		name = name[:i]
	}
	// A colon after the last slash starts a tag; one before it is a
	// registry's port.
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i]
	}
	for _, im := range images {
		if im.Name == name {
			return im.Ref(img[len(name):])
		}
	}
	return img
}
