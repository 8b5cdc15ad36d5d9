package butane

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/yamlnode"
	"github.com/hostprov/hostprov/pkg/compile"
)

// owner is a node's user or group in Butane: {id: N} or {name: x}.
func owner(o compile.Owner) *yaml.Node {
	if o.ID != nil {
		return yamlnode.Pairs(&yaml.Node{Kind: yaml.MappingNode}, "id", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(*o.ID)})
	}
	return yamlnode.Pairs(&yaml.Node{Kind: yaml.MappingNode}, "name", yamlnode.Str(o.Name))
}

// storageYAML is storage: of the Butane output; nil when there is
// nothing. Contents are written as Butane users write them: inline text as
// contents.inline, a local file as contents.local (relative to the spec's
// directory, which is butane's --files-dir), a download as contents.source
// with verification.hash. Butane translates it to the same storage the
// Ignition output has. Butane fcos 1.0.0 (Ignition 3.0.0) has no
// contents.local, which Butane only warns about there and leaves the file
// empty: for ignition 3.0.0 a local file's bytes are carried in the config
// itself, as inline text, or as a base64 data URL when they are not UTF-8.
func storageYAML(st compile.Storage, ignitionVersion string) (*yaml.Node, error) {
	if !st.HasPaths() {
		return nil, nil
	}
	n := &yaml.Node{Kind: yaml.MappingNode}
	if err := addList(n, "directories", st.Directories, directoryYAML); err != nil {
		return nil, err
	}
	hasLocal := ignitionVersion != "3.0.0"
	if err := addList(n, "files", st.Files, func(f compile.StorageFile) (*yaml.Node, error) { return fileYAML(f, hasLocal) }); err != nil {
		return nil, err
	}
	if err := addList(n, "links", st.Links, linkYAML); err != nil {
		return nil, err
	}
	return n, nil
}

// addList adds key: with the entry of each item to n; nothing when there
// are no items.
func addList[T any](n *yaml.Node, key string, items []T, entry func(T) (*yaml.Node, error)) error {
	if len(items) == 0 {
		return nil
	}
	seq := &yaml.Node{Kind: yaml.SequenceNode}
	for _, it := range items {
		e, err := entry(it)
		if err != nil {
			return err
		}
		seq.Content = append(seq.Content, e)
	}
	yamlnode.Pairs(n, key, seq)
	return nil
}

func directoryYAML(d compile.Directory) (*yaml.Node, error) {
	e := yamlnode.Pairs(&yaml.Node{Kind: yaml.MappingNode}, "path", yamlnode.Str(d.Path), "mode", yamlnode.Mode(d.Mode))
	owners(e, d.User, d.Group)
	return e, nil
}

// fileYAML is a file's entry; without hasLocal (Ignition 3.0.0) a local
// file's bytes go into the config itself.
func fileYAML(f compile.StorageFile, hasLocal bool) (*yaml.Node, error) {
	e := yamlnode.Pairs(&yaml.Node{Kind: yaml.MappingNode}, "path", yamlnode.Str(f.Path), "mode", yamlnode.Mode(f.Mode))
	owners(e, f.User, f.Group)
	if f.Overwrite {
		yamlnode.Pairs(e, "overwrite", yamlnode.Bool(true))
	}
	c := &yaml.Node{Kind: yaml.MappingNode}
	switch {
	case f.Source != "":
		yamlnode.Pairs(c, "source", yamlnode.Str(f.Source))
	case f.Local != "" && hasLocal:
		yamlnode.Pairs(c, "local", yamlnode.Str(f.Local))
	case f.Local != "" && !utf8.Valid(f.Contents):
		yamlnode.Pairs(c, "source", yamlnode.Str("data:;base64,"+base64.StdEncoding.EncodeToString(f.Contents)))
	case !utf8.Valid(f.Contents):
		return nil, fmt.Errorf("%s: %s: contents are not valid UTF-8, which Butane's inline cannot carry", f.Pos, f.Path)
	default:
		yamlnode.Pairs(c, "inline", yamlnode.Text(f.Contents))
	}
	if f.Hash != "" {
		yamlnode.Pairs(c, "verification", yamlnode.Pairs(&yaml.Node{Kind: yaml.MappingNode}, "hash", yamlnode.Str(f.Hash)))
	}
	return yamlnode.Pairs(e, "contents", c), nil
}

func linkYAML(l compile.Link) (*yaml.Node, error) {
	e := yamlnode.Pairs(&yaml.Node{Kind: yaml.MappingNode}, "path", yamlnode.Str(l.Path), "target", yamlnode.Str(l.Target))
	if l.Hard {
		yamlnode.Pairs(e, "hard", yamlnode.Bool(true))
	}
	owners(e, l.User, l.Group)
	if l.Overwrite {
		yamlnode.Pairs(e, "overwrite", yamlnode.Bool(true))
	}
	return e, nil
}

func owners(e *yaml.Node, user, group compile.Owner) {
	if !user.IsZero() {
		yamlnode.Pairs(e, "user", owner(user))
	}
	if !group.IsZero() {
		yamlnode.Pairs(e, "group", owner(group))
	}
}
