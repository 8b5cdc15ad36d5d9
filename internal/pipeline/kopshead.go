package pipeline

import (
	"bytes"
	"strings"

	"gopkg.in/yaml.v3"
)

// kopsManifest reports whether data's first YAML document has a kops
// apiVersion. Anything it cannot tell is left to the hostprov spec parser,
// whose diagnostics say what is wrong.
//
// It answers as kopsHead does on every input, but a hostprov spec, which
// opens with its apiVersion, costs it a look at the first lines instead of
// a second parse of the whole spec (a fifth of a render of 10,000 hooks).
func kopsManifest(data []byte) bool {
	return !hostprovHead(data) && kopsHead(data)
}

// hostprovHead reports whether data opens, after blank lines, comment
// lines and at most one "---" line, with a line "apiVersion: V" where V
// starts with a letter or digit other than "k". That line is then the
// first key of the first document's root mapping, and its value a plain
// scalar that cannot start with "kops", so kopsHead is false: yaml.v3
// decodes that value into apiVersion, or fails on the document (another
// key decoding to apiVersion is an error too, and a merged apiVersion
// loses to an explicit one). It is false whenever it cannot be sure of
// that, and kopsHead decides.
func hostprovHead(data []byte) bool {
	marker := false
	for line := range bytes.Lines(data) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		if v, ok := bytes.CutPrefix(line, []byte("apiVersion: ")); ok {
			return len(v) > 0 && v[0] != 'k' &&
				('a' <= v[0] && v[0] <= 'z' || 'A' <= v[0] && v[0] <= 'Z' || '0' <= v[0] && v[0] <= '9')
		}
		// Only plain ASCII before it: YAML breaks lines at \r, U+0085,
		// U+2028 and U+2029 too, which would end a comment early.
		for _, c := range line {
			if c < ' ' && c != '\t' || c > '~' {
				return false
			}
		}
		switch t := bytes.TrimLeft(line, " \t"); {
		case len(t) == 0 || t[0] == '#':
		case string(line) == "---" && !marker:
			marker = true
		default:
			return false
		}
	}
	return false
}

// kopsHead is kopsManifest by a parse of data's first document.
func kopsHead(data []byte) bool {
	var head struct {
		APIVersion string `yaml:"apiVersion"`
	}
	if yaml.NewDecoder(bytes.NewReader(data)).Decode(&head) != nil {
		return false
	}
	return strings.HasPrefix(head.APIVersion, "kops.k8s.io/") || strings.HasPrefix(head.APIVersion, "kops/")
}
