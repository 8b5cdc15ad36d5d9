package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"

	butane "github.com/coreos/butane/config"
	butanecommon "github.com/coreos/butane/config/common"
	"gopkg.in/yaml.v3"
)

// The leftovers of an import are what the spec cannot say, written as a
// config of the input's own kind (Result.Rest): the parts of an Ignition
// config as an Ignition config, of a Butane config as a Butane config, of
// a cloud-config as a cloud-config. render --merge takes the file back,
// so that import, then render of the spec with the leftovers merged,
// gives the input again.
//
// Import marks each part it keeps out of the spec by its path in the
// input (keys and list indexes); the leftovers are the input with only
// the marked parts. A list entry of which only some fields are marked
// keeps the fields that identify it (a file's path, a unit's or user's
// name), so that the merge puts the fields onto the entry the spec has.

// leftoversPrefix is the prefix of a warning about a part of the input that
// goes to the leftovers rather than the spec.
const leftoversPrefix = "to the leftovers: "

// restPath is a path into the input: string keys and int indexes.
type restPath []any

// marks are the parts of an input that go to the leftovers.
type marks []restPath

func (m *marks) add(p ...any) { *m = append(*m, append(restPath(nil), p...)) }

// under are the marks below key k, k taken off their front; whole is true
// when a mark is k itself.
func (m marks) under(k any) (sub marks, whole bool) {
	for _, p := range m {
		if len(p) == 0 || p[0] != k {
			continue
		}
		if len(p) == 1 {
			whole = true
		}
		sub = append(sub, p[1:])
	}
	return sub, whole
}

// identityKeys identify an entry of a list: what a merge matches entries
// by. An entry of which only a field goes to the leftovers keeps them.
var identityKeys = []string{"name", "path", "device"}

// projectJSON is the part of v (generic JSON data) that ms mark.
func projectJSON(v any, ms marks, entry bool) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			sub, whole := ms.under(k)
			switch {
			case whole:
				out[k] = e
			case len(sub) > 0:
				if p := projectJSON(e, sub, false); p != nil {
					out[k] = p
				}
			}
		}
		if len(out) == 0 {
			return nil
		}
		if entry {
			for _, k := range identityKeys {
				if id, ok := v[k]; ok {
					out[k] = id
				}
			}
		}
		return out
	case []any:
		var out []any
		for i, e := range v {
			sub, whole := ms.under(i)
			switch {
			case whole:
				out = append(out, e)
			case len(sub) > 0:
				if p := projectJSON(e, sub, true); p != nil {
					out = append(out, p)
				}
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	return nil
}

// projectYAML is the part of the YAML node n that ms mark, as a new node
// (the marked nodes themselves, with their comments).
func projectYAML(n *yaml.Node, ms marks, entry bool) *yaml.Node {
	switch n.Kind {
	case yaml.MappingNode:
		out := &yaml.Node{Kind: yaml.MappingNode, Tag: n.Tag, Style: n.Style}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, e := n.Content[i], n.Content[i+1]
			sub, whole := ms.under(k.Value)
			switch {
			case whole:
				out.Content = append(out.Content, k, e)
			case len(sub) > 0:
				if p := projectYAML(e, sub, false); p != nil {
					out.Content = append(out.Content, k, p)
				}
			}
		}
		if len(out.Content) == 0 {
			return nil
		}
		if entry {
			for _, id := range identityKeys {
				if v := mapValue(n, id); v != nil && mapValue(out, id) == nil {
					out.Content = append([]*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: id}, v}, out.Content...)
				}
			}
		}
		return out
	case yaml.SequenceNode:
		out := &yaml.Node{Kind: yaml.SequenceNode, Tag: n.Tag, Style: n.Style}
		for i, e := range n.Content {
			sub, whole := ms.under(i)
			switch {
			case whole:
				out.Content = append(out.Content, e)
			case len(sub) > 0:
				if p := projectYAML(e, sub, true); p != nil {
					out.Content = append(out.Content, p)
				}
			}
		}
		if len(out.Content) == 0 {
			return nil
		}
		return out
	}
	return nil
}

var pathPartRE = regexp.MustCompile(`\[(\d+)\]|\.?([^.\[]+)`)

// parsePath reads a path as jsonPath writes it (storage.files[2].mode).
func parsePath(s string) restPath {
	var p restPath
	for _, m := range pathPartRE.FindAllStringSubmatch(s, -1) {
		if m[1] != "" {
			i, _ := strconv.Atoi(m[1])
			p = append(p, i)
		} else {
			p = append(p, m[2])
		}
	}
	return p
}

// ignitionRest writes the marked parts of an Ignition config (generic, as
// import read it) as an Ignition config of version, checked with
// Ignition's own parser of that version; nil when nothing is marked.
func ignitionRest(generic any, ms marks, version string) ([]byte, error) {
	if len(ms) == 0 {
		return nil, nil
	}
	rest, _ := projectJSON(generic, ms, false).(map[string]any)
	if rest == nil {
		return nil, nil
	}
	ign, _ := rest["ignition"].(map[string]any)
	if ign == nil {
		ign = map[string]any{}
		rest["ignition"] = ign
	}
	ign["version"] = version
	b, err := json.MarshalIndent(rest, "", "  ")
	if err != nil {
		return nil, err
	}
	b = append(b, '\n')
	parse, ok := ignitionParsers[version]
	if !ok {
		return nil, fmt.Errorf("no Ignition parser of version %s for the leftovers", version)
	}
	if _, rpt, err := parse(b); err != nil || rpt.IsFatal() {
		return nil, fmt.Errorf("Ignition %s refuses the leftovers: %v %s", version, err, rpt.String())
	}
	return b, nil
}

// butaneRestVersion is the Butane version the leftovers of a Butane
// config of an ahead version are written in: the newest one whose
// Ignition version render writes.
var butaneRestVersion = map[string]string{"fcos 1.7.0": "1.6.0"}

// butaneRest writes the Ignition leftovers ign (of a Butane config of
// variant and version) as a Butane config of that variant, its keys in
// Butane's snake_case. It reports false when Butane does not translate
// the result to ign again, as data; the caller keeps the Ignition
// leftovers then.
func butaneRest(ign []byte, variant, version string) ([]byte, bool) {
	var m map[string]any
	if json.Unmarshal(ign, &m) != nil {
		return nil, false
	}
	if ig, _ := m["ignition"].(map[string]any); ig != nil {
		delete(ig, "version")
		if len(ig) == 0 {
			delete(m, "ignition")
		}
	}
	if rv, ok := butaneRestVersion[variant+" "+version]; ok {
		version = rv
	}
	doc := &yaml.Node{Kind: yaml.MappingNode}
	doc.Content = append(doc.Content,
		&yaml.Node{Kind: yaml.ScalarNode, Value: "variant"}, &yaml.Node{Kind: yaml.ScalarNode, Value: variant},
		&yaml.Node{Kind: yaml.ScalarNode, Value: "version"}, &yaml.Node{Kind: yaml.ScalarNode, Value: version})
	body := snakeKeys(m)
	var bn yaml.Node
	if err := bn.Encode(body); err != nil {
		return nil, false
	}
	if bn.Kind == yaml.MappingNode {
		doc.Content = append(doc.Content, bn.Content...)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, false
	}
	out := buf.Bytes()
	back, rpt, err := butane.TranslateBytes(out, butanecommon.TranslateBytesOptions{})
	if err != nil || rpt.IsFatal() {
		return nil, false
	}
	if !sameIgnitionData(back, ign) {
		return nil, false
	}
	return out, true
}

// sameIgnitionData reports whether two Ignition configs are the same
// data, their versions aside.
func sameIgnitionData(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	for _, v := range []any{x, y} {
		if ig, _ := v.(map[string]any)["ignition"].(map[string]any); ig != nil {
			delete(ig, "version")
		}
	}
	return reflect.DeepEqual(prune(x), prune(y))
}

// snakeKeys spells the keys of Ignition JSON data as Butane does:
// sizeMiB as size_mib, httpHeaders as http_headers.
func snakeKeys(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[snake(k)] = snakeKeys(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = snakeKeys(e)
		}
		return out
	}
	return v
}
