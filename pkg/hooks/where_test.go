package hooks

import (
	"fmt"
	"testing"
)

// whereSrc has one value of each scalar style whose lines are asked for.
// Line numbers are in the comments at the right.
const whereSrc = `apiVersion: hostprov/v1alpha1
kind: Hooks
hooks:
- name: literal
  manifest: |
    Type=oneshot
      Indented=1

    Last=1
- name: strip
  manifest: |-
    A=1
    B=2
- name: keep
  manifest: |+
    A=1

- name: folded
  manifest: >
    one
    two

    three
      more
    four
- name: indicator
  manifest: |2
        Deep=1
      Flat=2
- name: leading-empty
  manifest: |

    After=1
- name: quoted
  manifest: "Type=oneshot"
  description: 'single'
  user: plain
  exec: [/bin/true, "a b", 'c']
  env:
    PATH: /usr/bin
  directives:
    Unit:
    - After=x
    - "Before=y"
  dropins:
  - name: a.conf
    contents: |
      [Service]
      Nice=1
  - name: b.conf
    contents: x
- name: seq-block
  exec:
  - |-
    /bin/true
`

func TestWhere(t *testing.T) {
	spec, diags := Parse("w.yaml", []byte(whereSrc))
	if diags.HasErrors(false) {
		t.Fatalf("unexpected diagnostics:\n%v", diags)
	}
	tests := []struct {
		path string
		want string
	}{
		{"", "w.yaml:1:1"},
		{"apiVersion", "w.yaml:1:13"},
		{"hooks", "w.yaml:4:1"},
		{"hooks[0]", "w.yaml:4:3"},
		{"hooks[0].name", "w.yaml:4:9"},
		{"hooks[0].manifest", "w.yaml:5:13"},
		{"hooks[6].exec", "w.yaml:38:9"},
		{"hooks[6].exec[1]", "w.yaml:38:21"},
		{"hooks[6].exec[2]", "w.yaml:38:28"},
		{"hooks[6].env.PATH", "w.yaml:40:11"},
		{"hooks[6].directives.Unit", "w.yaml:43:5"},
		{"hooks[6].directives.Unit[1]", "w.yaml:44:7"},
		{"hooks[6].dropins[1]", "w.yaml:50:5"},
		{"hooks[6].dropins[1].contents", "w.yaml:51:15"},
		// Paths that are not in the document give their nearest ancestor.
		{"hooks[0].wantedBy", "w.yaml:4:3"},
		{"hooks[6].env.HOME", "w.yaml:40:5"},
		{"hooks[6].exec[9]", "w.yaml:38:9"},
		{"hooks[42].name", "w.yaml:4:1"},
		{"nothing.at.all", "w.yaml:1:1"},
	}
	for _, tt := range tests {
		if got := spec.Where(tt.path).String(); got != tt.want {
			t.Errorf("Where(%q) = %s, want %s", tt.path, got, tt.want)
		}
	}
	if got := (&Spec{File: "f"}).Where("hooks[0]"); got != (Position{File: "f"}) {
		t.Errorf("Where on an empty spec = %v, want the file", got)
	}
	if got := (*Spec)(nil).Where("x"); got != (Position{}) {
		t.Errorf("Where on nil = %v", got)
	}
}

func TestWhereInScalar(t *testing.T) {
	spec, diags := Parse("w.yaml", []byte(whereSrc))
	if diags.HasErrors(false) {
		t.Fatalf("unexpected diagnostics:\n%v", diags)
	}
	tests := []struct {
		path string
		line int
		want string
	}{
		// Literal: value lines are source lines, indented lines included.
		{"hooks[0].manifest", 1, "6:5"},
		{"hooks[0].manifest", 2, "7:5"},
		{"hooks[0].manifest", 3, "8:5"},
		{"hooks[0].manifest", 4, "9:5"},
		{"hooks[0].manifest", 5, "5:13"}, // past the end: Where
		{"hooks[0].manifest", 0, "5:13"},
		// Strip and keep chomping.
		{"hooks[1].manifest", 1, "12:5"},
		{"hooks[1].manifest", 2, "13:5"},
		{"hooks[1].manifest", 3, "11:13"},
		{"hooks[2].manifest", 1, "16:5"},
		{"hooks[2].manifest", 2, "17:5"},
		// Folded: "one two\nthree\n  more\nfour\n".
		{"hooks[3].manifest", 1, "20:5"},
		{"hooks[3].manifest", 2, "23:5"},
		{"hooks[3].manifest", 3, "24:5"},
		{"hooks[3].manifest", 4, "25:5"},
		// Indentation indicator: content starts at column 5 although the
		// first line is indented further.
		{"hooks[4].manifest", 1, "28:5"},
		{"hooks[4].manifest", 2, "29:5"},
		// Leading empty line.
		{"hooks[5].manifest", 1, "32:5"},
		{"hooks[5].manifest", 2, "33:5"},
		// Quoted scalars start after the quote; plain ones where they are.
		{"hooks[6].manifest", 1, "35:14"},
		{"hooks[6].description", 1, "36:17"},
		{"hooks[6].user", 1, "37:9"},
		{"hooks[6].exec[1]", 1, "38:22"},
		{"hooks[6].exec[2]", 1, "38:29"},
		{"hooks[6].directives.Unit[1]", 1, "44:8"},
		{"hooks[6].dropins[0].contents", 2, "49:7"},
		// A block scalar in a sequence.
		{"hooks[7].exec[0]", 1, "55:5"},
		// Not a scalar, or not in the document: Where.
		{"hooks[6].env", 1, "40:5"},
		{"hooks[9].manifest", 1, "4:1"},
	}
	for _, tt := range tests {
		got := spec.WhereInScalar(tt.path, tt.line)
		if s := fmt.Sprintf("%d:%d", got.Line, got.Column); s != tt.want || got.File != "w.yaml" {
			t.Errorf("WhereInScalar(%q, %d) = %v, want %s", tt.path, tt.line, got, tt.want)
		}
	}
}

// TestWhereInScalarFindsTheLine checks WhereInScalar against the source
// itself: line n of each manifest must be found at the place it names.
func TestWhereInScalarFindsTheLine(t *testing.T) {
	spec, _ := Parse("w.yaml", []byte(whereSrc))
	lines := splitText(whereSrc)
	for _, i := range []int{0, 1, 4, 5} { // the literal manifests
		path := fmt.Sprintf("hooks[%d].manifest", i)
		for n, want := range splitText(spec.Hooks[i].Manifest) {
			if want == "" {
				continue
			}
			p := spec.WhereInScalar(path, n+1)
			src := lines[p.Line-1]
			if got := src[min(p.Column-1, len(src)):]; got != want {
				t.Errorf("%s line %d: source at %v is %q, want %q", path, n+1, p, got, want)
			}
		}
	}
}
