package yamlnode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"gopkg.in/yaml.v3"
)

// notKey is the message of a line that is not a key of the mapping
// above it, where that mapping starts.
const notKey = "this line is not a key of the mapping that starts on line %d: its indentation fits no mapping above (yaml: did not find expected key)"

// syntaxCases are the syntax errors a person writes most, each with the
// position (line:column) and the message and hint Syntax must give.
var syntaxCases = []struct {
	name, src string
	pos       string
	msg, hint string
}{
	// yaml.v3 says "line 4" for this "[" on line 5: a parser error
	// counts the construct's line from 0.
	{"unclosed flow list", "apiVersion: a\nkind: b\nhooks:\n- name: x\n  exec: [/bin/true\n  user: root\n", "5:9",
		`the list that starts here with "[" is not closed: yaml.v3 gave up on line 6, where it found neither "," nor "]" after an item (yaml: did not find expected ',' or ']')`,
		`end the list with "]" after its last item and put "," between items; or write it without brackets, one "- item" per line`},
	// On the first line, yaml.v3 gives the line of the end of the
	// file instead.
	{"unclosed flow list on the first line", "exec: [/bin/true\n", "1:7",
		`the list that starts here with "[" is not closed: yaml.v3 reached the end of the file without finding "]" (yaml: did not find expected ',' or ']')`,
		`end the list with "]" after its last item and put "," between items; or write it without brackets, one "- item" per line`},
	{"unclosed outer flow list", "a: [1, [2, 3]\n", "1:4",
		`the list that starts here with "[" is not closed: yaml.v3 reached the end of the file without finding "]" (yaml: did not find expected ',' or ']')`,
		`end the list with "]" after its last item and put "," between items; or write it without brackets, one "- item" per line`},
	{"flow list with a missing comma", "a: [\n  1,\n  2\n  3: 4\nb: 1\n", "1:4",
		`the list that starts here with "[" is not closed: yaml.v3 gave up on line 4, where it found neither "," nor "]" after an item (yaml: did not find expected ',' or ']')`,
		`end the list with "]" after its last item and put "," between items; or write it without brackets, one "- item" per line`},
	{"unclosed flow mapping", "a: 1\nexec: {a: b\nc: d\n", "2:7",
		`the mapping that starts here with "{" is not closed: yaml.v3 gave up on line 3, where it found neither "," nor "}" after an entry (yaml: did not find expected ',' or '}')`,
		`end the mapping with "}" after its last entry and put "," between entries; or write it without brackets, one "key: value" per line`},
	{"unclosed double quote", "a: 1\nb: \"abc\nc: d\n", "2:4",
		`the string that starts here with " is not closed: yaml.v3 reached the end of the file looking for the closing " (yaml: found unexpected end of stream)`,
		`end the string with "; inside double quotes, write \" for a quote`},
	// On the first line, yaml.v3 gives the line after the end.
	{"unclosed single quote on the first line", "a: 'abc\nc: d\n", "1:4",
		`the string that starts here with ' is not closed: yaml.v3 reached the end of the file looking for the closing ' (yaml: found unexpected end of stream)`,
		`end the string with '; inside single quotes, write '' for a quote`},
	{"quote inside single quotes", "a: 'it's'\n", "1:8",
		`the value ends before this text, which is not a key of the mapping that starts on line 1 (yaml: did not find expected key)`,
		`quote the whole value; a quote inside a single-quoted value is written ''`},
	// yaml.v3 names the outer mapping's first line, counted from
	// 0 or, as here, the bad line counted from 0.
	{"key indented less than its siblings", "a: 1\nb:\n  c: 1\n d: 2\n", "4:2",
		fmt.Sprintf(notKey, 1),
		`indent it by 2 spaces, like the key on line 3, or by 0, like the keys of the mapping that starts on line 1`},
	{"key indented less, deeper", "a:\n  b:\n    c: 1\n   d: 2\n  e: 3\n", "4:4",
		fmt.Sprintf(notKey, 2),
		`indent it by 4 spaces, like the key on line 3, or by 2, like the keys of the mapping that starts on line 2`},
	{"key indented more than its siblings", "a: 1\nb:\n  c: 1\n    d: 2\n", "4:5",
		`this line is indented more than the key on line 3, so it continues the value there, and a value cannot hold a key (yaml: mapping values are not allowed in this context)`,
		`indent this key by 2 spaces, like the key on line 3, or by more only under a key that has no value`},
	{"second key indented", "apiVersion: x\n kind: y\n", "2:2",
		`this line is indented more than the key on line 1, so it continues the value there, and a value cannot hold a key (yaml: mapping values are not allowed in this context)`,
		`indent this key by 0 spaces, like the key on line 1, or by more only under a key that has no value`},
	// The key on line 4 starts after "- ".
	{"key indented more than a list item's key", "hooks:\n- name: a\n   exec: [/bin/true]\n", "3:4",
		`this line is indented more than the key on line 2, so it continues the value there, and a value cannot hold a key (yaml: mapping values are not allowed in this context)`,
		`indent this key by 2 spaces, like the key on line 2, or by more only under a key that has no value`},
	{"key indented less than a list item's key", "hooks:\n- name: a\n  exec: x\n user: b\n", "4:2",
		fmt.Sprintf(notKey, 1),
		`indent it by 2 spaces, like the key on line 3, or by 0, like the keys of the mapping that starts on line 1`},
	{"colon in a plain value", "a: 1\nb: c: d\n", "2:5",
		`": " in a value that is not quoted (yaml: mapping values are not allowed in this context)`,
		`quote the value ("a: b"), or put the key on a line of its own`},
	{"tab as indentation", "a: 1\nb:\n\tc: 1\n", "3:1",
		`a tab in the indentation: YAML indents with spaces only (yaml: found character that cannot start any token)`,
		`YAML indents with spaces: replace the tabs on this line with spaces`},
	// yaml.v3 names the line of the value before the tab.
	{"tab after spaces", "a: 1\nb:\n  c: 1\n\td: 2\n", "4:1",
		`a tab in the indentation: YAML indents with spaces only (yaml: found a tab character that violates indentation)`,
		`YAML indents with spaces: replace the tabs on this line with spaces`},
	{"tab in a block scalar", "a: |\n  x\n\ty\n", "3:1",
		`a tab in the indentation: YAML indents with spaces only (yaml: found a tab character where an indentation space is expected)`,
		`YAML indents with spaces: replace the tabs on this line with spaces`},
	{"list item in a mapping", "a: 1\nb: x\n- c\n", "3:1",
		`a list item where a key of the mapping that starts on line 1 was expected (yaml: did not find expected key)`,
		`a list is the value of a key: end the line above with "key:" and indent the "- " items under it`},
	{"key in a list", "a:\n  - x\n  y: 1\n", "3:3",
		`this line is inside the list that starts on line 2, but is not an item of it (yaml: did not find expected '-' indicator)`,
		`start the line with "- " to add an item to the list, or indent it less, like the key that holds the list, to add a key`},
	{"line without a colon", "a: 1\na b\nc: 1\n", "2:1",
		`a line in a mapping that is not "key: value" (yaml: could not find expected ':')`,
		`write "key: value", with a space after the colon; text that continues the value above must be indented more than its key`},
	{"unknown escape", "a: 1\nb: \"x\\q\"\n", "2:6",
		`unknown escape in a double-quoted string (yaml: found unknown escape character)`,
		`inside double quotes a backslash starts an escape: write \\ for a backslash, or use single quotes, in which a backslash is itself`},
	{"unknown escape on the first line", "a: \"x\\q\"\n", "1:6",
		`unknown escape in a double-quoted string (yaml: found unknown escape character)`,
		`inside double quotes a backslash starts an escape: write \\ for a backslash, or use single quotes, in which a backslash is itself`},
	{"reserved character", "a: 1\nb: @x\n", "2:4",
		`"@" cannot start a value (yaml: found character that cannot start any token)`,
		`quote the value: '@...'`},
	{"anchor without a name", "a: 1\nb: &\n", "2:4",
		`an anchor (&) or alias (*) without a name (yaml: did not find expected alphabetic or numeric character)`,
		`give it a name (&name, *name), or quote the value if & or * is meant as text`},
	{"unknown anchor", "a: 1\nb: *x\n", "2:4",
		`unknown anchor 'x' referenced`,
		`define the anchor &x on a value before this alias uses it`},
	{"byte order mark", "\ufeffa: 1\nb: [x\n", "2:4",
		`the list that starts here with "[" is not closed: yaml.v3 reached the end of the file without finding "]" (yaml: did not find expected ',' or ']')`,
		`end the list with "]" after its last item and put "," between items; or write it without brackets, one "- item" per line`},
	{"CRLF line breaks", "a: 1\r\nb:\r\n  c: 1\r\n d: 2\r\n", "4:2",
		fmt.Sprintf(notKey, 1),
		`indent it by 2 spaces, like the key on line 3, or by 0, like the keys of the mapping that starts on line 1`},
	// A key between two levels: either may be meant.
	{"key indented between two levels", "a:\n  b: 1\n c: 2\n", "3:2",
		fmt.Sprintf(notKey, 1),
		`indent it by 2 spaces, like the key on line 2, or by 0, like the keys of the mapping that starts on line 1`},
	// yaml.v3's reader refuses these characters without a line; they
	// are placed at the character itself, counted in characters.
	{"NUL in a value", "a: 1\nb: x\x00y\n", "2:5",
		`the control character U+0000, which YAML does not allow in a file (yaml: control characters are not allowed)`,
		`remove the character, or write it as an escape in a double-quoted string: "\0"`},
	{"C1 control after other text", "a: 1\nb: \u00e9t\u00e9 \u0086x\n", "2:8",
		`the C1 control character U+0086, which YAML does not allow in a file (yaml: control characters are not allowed)`,
		`remove the character, or write it as an escape in a double-quoted string: "\x86"; a C1 control in a text is often a Windows-1252 quote or dash that was converted as Latin-1`},
	{"last C1 control", "a: 1\nb: [x, \u009f]\n", "2:8",
		`the C1 control character U+009F, which YAML does not allow in a file (yaml: control characters are not allowed)`,
		`remove the character, or write it as an escape in a double-quoted string: "\x9f"; a C1 control in a text is often a Windows-1252 quote or dash that was converted as Latin-1`},
	{"DEL in a comment", "a: 1\n# x\x7f\nb: 2\n", "2:4",
		`the control character U+007F, which YAML does not allow in a file (yaml: control characters are not allowed)`,
		`remove the character, or write it as an escape in a double-quoted string: "\x7f"`},
	{"noncharacter", "a: 1\nb: x\ufffe\n", "2:5",
		`the noncharacter U+FFFE, which YAML does not allow in a file (yaml: control characters are not allowed)`,
		`remove the character, or write it as an escape in a double-quoted string: "\ufffe"`},
	{"control character after a NEL line break", "a: 1\u0085b: x\x01\n", "2:5",
		`the control character U+0001, which YAML does not allow in a file (yaml: control characters are not allowed)`,
		`remove the character, or write it as an escape in a double-quoted string: "\x01"`},
	{"control character after a byte order mark", "\ufeffa: x\x1b\n", "1:5",
		`the control character U+001B, which YAML does not allow in a file (yaml: control characters are not allowed)`,
		`remove the character, or write it as an escape in a double-quoted string: "\x1b"`},
	{"invalid UTF-8 byte", "a: 1\nb: \u00e9\xff\n", "2:5",
		`byte 0xff is not UTF-8 (yaml: invalid leading UTF-8 octet)`,
		`YAML is UTF-8 text: remove the byte, or convert the file to UTF-8 (iconv -t UTF-8)`},
	{"truncated UTF-8 sequence", "a: 1\nb: x\xc3y\n", "2:5",
		`byte 0xc3 is not UTF-8 (yaml: invalid trailing UTF-8 octet)`,
		`YAML is UTF-8 text: remove the byte, or convert the file to UTF-8 (iconv -t UTF-8)`},
	{"UTF-8 surrogate", "a: 1\nb: x\xed\xa0\x80\n", "2:5",
		`byte 0xed is not UTF-8 (yaml: invalid Unicode character)`,
		`YAML is UTF-8 text: remove the byte, or convert the file to UTF-8 (iconv -t UTF-8)`},
	{"in a second document", "a: 1\n---\nb: [x\n", "3:4",
		`the list that starts here with "[" is not closed: yaml.v3 reached the end of the file without finding "]" (yaml: did not find expected ',' or ']')`,
		`end the list with "]" after its last item and put "," between items; or write it without brackets, one "- item" per line`},
}

// TestSyntax checks where and how the syntax errors a person writes most
// are reported: the exact line and column, counted from 1, the message
// and the hint.
func TestSyntax(t *testing.T) {
	for _, tt := range syntaxCases {
		t.Run(tt.name, func(t *testing.T) {
			err := readAll([]byte(tt.src))
			if err == nil {
				t.Fatalf("%q reads without error", tt.src)
			}
			se := Syntax(err, []byte(tt.src))
			if got := fmt.Sprintf("%d:%d", se.Line, se.Column); got != tt.pos {
				t.Errorf("position = %s, want %s (yaml.v3 said %q)", got, tt.pos, err)
			}
			if se.Message != tt.msg {
				t.Errorf("message:\n got %s\nwant %s", se.Message, tt.msg)
			}
			if se.Hint != tt.hint {
				t.Errorf("hint:\n got %s\nwant %s", se.Hint, tt.hint)
			}
		})
	}
}

// readAll reads every document of src as the readers of specs and kops
// manifests do, and returns yaml.v3's error, or nil.
func readAll(src []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	for {
		var n yaml.Node
		if err := Decode(dec, &n); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// TestSyntaxInBounds reads every prefix of a few broken sources, and each
// of them with one byte left out: whatever yaml.v3 says about them, Syntax
// places it inside the source, without panicking.
func TestSyntaxInBounds(t *testing.T) {
	srcs := []string{
		"apiVersion: a\nkind: b\nhooks:\n- name: x\n  exec: [/bin/true, {a: \"b\\q\"}]\n  env: {A: 'x'}\n  user: |\n    a\n\tb\n",
		"\ufeffa:\n  - x\n  y: &a [1, *a]\r\n b: c: d\n--- !t\n%YAML 1.1\n",
	}
	checked := 0
	for _, src := range srcs {
		var variants []string
		for i := 0; i <= len(src); i++ {
			variants = append(variants, src[:i])
			if i < len(src) {
				variants = append(variants, src[:i]+src[i+1:])
			}
		}
		for _, v := range variants {
			err := readAll([]byte(v))
			if err == nil {
				continue
			}
			checked++
			se := Syntax(err, []byte(v))
			lines := len(splitLines([]byte(v)))
			if se.Line < 0 || se.Line > lines || se.Column < 0 || se.Line == 0 && se.Column != 0 {
				t.Errorf("%q: %v placed at %d:%d, outside its %d lines", v, err, se.Line, se.Column, lines)
			}
			if se.Message == "" || se.Hint == "" {
				t.Errorf("%q: %v: empty message or hint: %+v", v, err, se)
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d of the sources fail to read; the test needs broken sources", checked)
	}
	t.Logf("%d broken sources placed", checked)
}
