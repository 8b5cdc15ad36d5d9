// Package yamlnode holds what the strict readers of hook specs and kops
// manifests both need from yaml.v3's node tree, and the one way a spec
// or an imported config is written back as YAML (Encode).
package yamlnode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// KindName says what a node is, for messages ("must be a list, not a
// mapping").
func KindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "empty"
		case "!!bool":
			return "a boolean (" + n.Value + ")"
		case "!!int", "!!float":
			return "a number (" + n.Value + ")"
		case "!!str":
			return "a string"
		}
		return "a value tagged " + n.ShortTag()
	}
	return "an alias"
}

// Decode reads the next document. yaml.v3 has panicked on hostile input
// before (CVE-2022-28948); input it cannot read must be reported, not crash
// the program, so a panic in it becomes an error. Only the YAML library is
// guarded: a panic in hostprov's own code is a bug to see.
func Decode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: the YAML parser failed: %v", r)
		}
	}()
	return dec.Decode(n)
}

// Encode writes n to b as a YAML document indented by two spaces, as the
// spec reference and cloud-init's documentation write YAML.
func Encode(b *bytes.Buffer, n *yaml.Node) error {
	e := yaml.NewEncoder(b)
	e.SetIndent(2)
	if err := e.Encode(n); err != nil {
		return err
	}
	return e.Close()
}

// Documents yields the documents of src in turn, each the document node
// Decode reads, with a nil error. Where src does not read to its end, the
// last it yields is a nil node with Decode's error.
func Documents(src []byte) iter.Seq2[*yaml.Node, error] {
	return func(yield func(*yaml.Node, error) bool) {
		dec := yaml.NewDecoder(bytes.NewReader(src))
		for {
			var doc yaml.Node
			err := Decode(dec, &doc)
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(&doc, nil) {
				return
			}
		}
	}
}

// Text is a string scalar for text that a person should be able to
// read in the output: a literal block where BlockSafe says the block reads
// back as exactly the text, and a double-quoted scalar, with escapes where
// needed, otherwise. yaml.v3 may still pick double quotes for a text
// BlockSafe accepts (it does for characters beyond U+FFFF); that keeps the
// bytes too. The tests of package render prove the round trip with yaml.v3
// and with cloud-init's own YAML parser.
func Text(b []byte) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: string(b)}
	if BlockSafe(b) {
		n.Style = yaml.LiteralStyle
	} else {
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

// BlockSafe reports whether yaml.v3 writes b as a literal block that reads
// back as b. It does not for a text that starts with a line break, a space
// or a tab (yaml.v3 writes a wrong indentation indicator, or none), that
// does not end in exactly one line break, that has spaces or tabs before a
// line break, or that holds control characters or what YAML takes for a
// line break or byte order mark (U+0085, U+2028, U+2029, U+FEFF).
func BlockSafe(b []byte) bool {
	if len(b) == 0 || b[0] == '\n' || b[0] == ' ' || b[0] == '\t' || !utf8.Valid(b) ||
		!bytes.HasSuffix(b, []byte("\n")) || bytes.HasSuffix(b, []byte("\n\n")) {
		return false
	}
	// Byte by byte, with one comparison for printable ASCII and decoding
	// only what is not ASCII: the cloud-init and Butane outputs ask this
	// of every unit file, and decoding every rune of them was a tenth of
	// a cloud-init output's CPU.
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c-' ' < '~'-' '+1 {
			continue
		}
		switch {
		case c == '\n':
			if i > 0 && (b[i-1] == ' ' || b[i-1] == '\t') {
				return false
			}
		case c == '\t':
		case c < utf8.RuneSelf: // the other control characters, DEL
			return false
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == 0x85 || r == 0x2028 || r == 0x2029 || r == 0xfeff {
				return false
			}
			i += size - 1
		}
	}
	return true
}
