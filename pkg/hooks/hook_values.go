package hooks

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/suggest"
	"github.com/hostprov/hostprov/internal/yamlnode"
)

// The decoders of the values of a hook's fields, other than strings and
// lists of strings, and their encoders where encoding is more than
// writing the value.

// oneOf checks that a decoded string is one of allowed.
func (d *decoder) oneOf(v value, s string, allowed []string, what string) {
	if !v.isString() || contains(allowed, s) {
		return
	}
	hint := "use one of " + strings.Join(allowed, ", ")
	if m := suggest.Closest(s, allowed); m != "" {
		hint = "did you mean " + m + "?"
	}
	d.add(Error, v.pos, v.path, fmt.Sprintf("%q is not a %s", s, what), hint)
}

// timeSpan decodes a systemd time span ("5", "1min 30s", "infinity").
func (d *decoder) timeSpan(v value) string {
	s, ok := d.str(v, false)
	if !ok || s == "infinity" || timeSpanRE.MatchString(s) {
		return s
	}
	d.add(Error, v.pos, v.path, fmt.Sprintf("%s: %q is not a systemd time span", label(v.path), s),
		`write a number of seconds (5) or a span such as "1min 30s", "500ms", "2h" or "infinity"`)
	return s
}

// pre decodes the commands run before exec: a list of argument lists.
func (d *decoder) pre(v value) [][]string {
	n := v.node
	if isNull(n) {
		d.noValue(v, `write a list of commands, such as pre: [["/usr/bin/mkdir", "-p", "/x"]], or remove the line`)
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.add(Error, v.pos, v.path, fmt.Sprintf("pre must be a list of commands, not %s", yamlnode.KindName(n)),
			`write pre: [["/usr/bin/mkdir", "-p", "/x"]], one list of arguments per command`)
		return nil
	}
	// A flat list of strings is one command written without its brackets;
	// one report that shows it bracketed beats one per argument.
	flat := len(n.Content) > 0
	var words []string
	for _, c := range n.Content {
		rc := resolve(c)
		if rc.Kind != yaml.ScalarNode || isNull(rc) {
			flat = false
			break
		}
		words = append(words, fmt.Sprintf("%q", rc.Value))
	}
	if flat {
		d.add(Error, v.pos, v.path, "pre must be a list of commands, each a list of arguments, not a list of strings",
			fmt.Sprintf("write pre: [[%s]] for one command", strings.Join(words, ", ")))
		return nil
	}
	out := make([][]string, 0, len(n.Content))
	for i, c := range n.Content {
		if !d.spend(c) {
			break
		}
		out = append(out, d.argv(d.item(v.path, i, c)))
	}
	return out
}

// env decodes environment variables.
func (d *decoder) env(v value) map[string]string {
	n := v.node
	switch {
	case isNull(n):
		d.noValue(v, "write variables under env:, such as env: {NAME: value}, or remove the line")
		return nil
	case n.Kind != yaml.MappingNode:
		d.add(Error, v.pos, v.path, fmt.Sprintf("env must be a mapping of names to values, not %s", yamlnode.KindName(n)),
			"write env: {NAME: value}, one variable per key")
		return nil
	}
	out := map[string]string{}
	d.mapping(n, v.path, func(e entry) {
		if !isEnvName(e.name) {
			d.add(Error, d.pos(e.key), e.path, fmt.Sprintf("%q is not a valid environment variable name", e.name),
				"a name starts with a letter or _ and has only letters, digits and _")
		}
		if isNull(e.node) {
			d.noValue(e.value, fmt.Sprintf(`write %s: "" for an empty value`, e.name))
			return
		}
		if s, ok := d.str(e.value, false); ok {
			out[d.keep(e.name)] = s
		}
	})
	return out
}

// directives decodes the extra Key=Value entries per section.
func (d *decoder) directives(v value) map[string][]string {
	n := v.node
	switch {
	case isNull(n):
		d.noValue(v, `write sections under directives:, such as directives: {Unit: ["After=network-online.target"]}, or remove the line`)
		return nil
	case n.Kind != yaml.MappingNode:
		d.add(Error, v.pos, v.path, fmt.Sprintf("directives must be a mapping of sections to lists, not %s", yamlnode.KindName(n)),
			`write directives: {Unit: ["After=network-online.target"]}`)
		return nil
	}
	out := map[string][]string{}
	d.mapping(n, v.path, func(e entry) {
		section := e.name
		keyPos := d.pos(e.key)
		switch t := strings.TrimSpace(section); {
		case t == "":
			d.add(Error, keyPos, e.path, "a section name is empty", "write the section's name, such as Unit, Service or Install")
		case strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]"):
			d.add(Error, keyPos, e.path, fmt.Sprintf("section name %q has brackets", section),
				"write the section name without brackets: "+strings.Trim(t, "[]"))
		default:
			d.checkControlText(value{path: e.path, pos: keyPos}, section, false)
		}
		items, _ := d.strList(e.value, `["After=network-online.target"]`)
		if items == nil {
			return
		}
		for i, s := range items {
			d.checkDirective(e.path, i, s)
		}
		out[d.keep(section)] = items
	})
	return out
}

// checkDirective checks the form of one Key=Value entry. The value may be
// empty: "ExecStart=" resets a list in systemd.
func (d *decoder) checkDirective(path string, i int, s string) {
	p := d.index(path, i)
	pos := d.spec.Where(p)
	eq := strings.IndexByte(s, '=')
	switch {
	case eq < 0:
		d.add(Error, pos, p, fmt.Sprintf("%q is not a Key=Value entry", s), "write Key=Value, such as After=network-online.target")
	case eq == 0:
		d.add(Error, pos, p, fmt.Sprintf("%q has no key before =", s), "write Key=Value, such as After=network-online.target")
	case !isDirectiveKey(s[:eq]):
		hint := "write Key=Value: a key has only letters, digits and -"
		if isDirectiveKey(strings.TrimSpace(s[:eq])) {
			hint = "write Key=Value with no space before ="
		}
		d.add(Error, pos, p, fmt.Sprintf("%q is not a valid directive key", s[:eq]), hint)
	}
}

// dropins decodes a hook's drop-ins.
func (d *decoder) dropins(v value) []Dropin {
	if !d.list(v, "write a list of drop-ins, such as dropins: [{name: 10-limits.conf, contents: ...}], or remove the line",
		"dropins must be a list", `write each drop-in as "- name: 10-limits.conf" with its contents: under it`) {
		return nil
	}
	n := v.node
	out := make([]Dropin, 0, len(n.Content))
	first := map[string]Position{}
	for i, c := range n.Content {
		if !d.spend(c) {
			break
		}
		item := d.item(v.path, i, c)
		if item.node.Kind != yaml.MappingNode {
			d.add(Error, item.pos, item.path, fmt.Sprintf("a drop-in must be a mapping of name and contents, not %s", yamlnode.KindName(item.node)),
				`write "- name: 10-limits.conf" with its contents: under it`)
			continue
		}
		out = append(out, Dropin{})
		dr := &out[len(out)-1]
		st := decodeEntry(d, dropinKind, item, dr)
		if !dropinKind.has(st.present, "name") {
			d.add(Error, item.pos, item.path+".name", "the drop-in has no name", "add name: with a file name ending in .conf, such as 10-limits.conf")
		}
		if !dropinKind.has(st.present, "contents") {
			d.add(Error, item.pos, item.path+".contents", "the drop-in has no contents",
				"add contents: | with the section headers and lines to add")
		}
		if st.nameOK {
			d.checkDropinName(item.path+".name", dr.Name, first)
		}
	}
	return out
}

func (d *decoder) checkDropinName(p, name string, first map[string]Position) {
	pos := d.spec.Where(p)
	switch {
	case name == "":
		d.add(Error, pos, p, "the drop-in's name is empty", "write a file name ending in .conf, such as 10-limits.conf")
	case strings.Contains(name, "/"):
		d.add(Error, pos, p, fmt.Sprintf("drop-in name %q contains /", name),
			"a drop-in name is a file name inside the unit's .d directory, such as 10-limits.conf")
	case strings.HasPrefix(name, "."):
		d.add(Error, pos, p, fmt.Sprintf("drop-in name %q starts with a dot", name),
			"a drop-in name is a file name such as 10-limits.conf; systemd ignores hidden files")
	case !strings.HasSuffix(name, ".conf"):
		d.add(Error, pos, p, fmt.Sprintf("drop-in name %q does not end in .conf", name),
			fmt.Sprintf("systemd reads only *.conf files in a drop-in directory: call it %s.conf", name))
	}
	if prev, dup := first[name]; dup {
		d.add(Error, pos, p, fmt.Sprintf("there is already a drop-in named %q in this hook", name),
			fmt.Sprintf("the first is on line %d: merge them, or rename one", prev.Line))
	} else {
		first[name] = pos
	}
}

// relDir decodes a directory for StateDirectory= and its kin: a relative
// path below the directory systemd puts it in (/var/lib, /var/log, /etc).
func (d *decoder) relDir(v value) string {
	s, ok := d.str(v, false)
	if !ok {
		return s
	}
	switch {
	case s == "":
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s is empty", label(v.path)), "write a directory name, such as myapp, or remove the line")
	case strings.HasPrefix(s, "/"):
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s %q is an absolute path", label(v.path), s),
			fmt.Sprintf("write it relative to the directory systemd puts it in, such as %s", strings.TrimLeft(s, "/")))
	case strings.Contains(s, "..") || strings.ContainsAny(s, " \\"):
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s %q is not a plain relative directory", label(v.path), s),
			"use a name such as myapp or myapp/cache, without .., spaces or backslashes")
	}
	return s
}

// steps decodes a command hook's steps: a list of {name, run} or
// {name, sh}.
func (d *decoder) steps(v value) []Step {
	if !d.list(v, "write a list of steps, such as steps: [{name: hello, run: [/bin/echo, hello]}], or remove the line",
		"steps must be a list", `write each step as "- name: detect" with run: [...] or sh: under it`) {
		return nil
	}
	n := v.node
	if len(n.Content) == 0 {
		d.add(Error, v.pos, v.path, "steps is empty", "add a step, or remove the line")
		return nil
	}
	out := make([]Step, 0, len(n.Content))
	first := map[string]int{}
	for i, c := range n.Content {
		if !d.spend(c) {
			break
		}
		item := d.item(v.path, i, c)
		if item.node.Kind != yaml.MappingNode {
			d.add(Error, item.pos, item.path, fmt.Sprintf("a step must be a mapping of name and run or sh, not %s", yamlnode.KindName(item.node)),
				`write "- name: detect" with run: [...] or sh: under it`)
			continue
		}
		out = append(out, Step{})
		s := &out[len(out)-1]
		st := decodeEntry(d, stepKind, item, s)
		hasRun, hasSh := stepKind.has(st.present, "run"), stepKind.has(st.present, "sh")
		switch {
		case !st.nameOK:
			if s.Name == "" {
				d.add(Error, item.pos, item.path+".name", "the step has no name", "add name: such as name: install")
			}
		case !stepNameRE.MatchString(s.Name):
			p := item.path + ".name"
			d.add(Error, d.spec.Where(p), p, fmt.Sprintf("step name %q is not a plain name", s.Name),
				"use letters, digits, '.', '_' and '-', starting with a letter or digit, such as install-iscsi")
		default:
			if j, dup := first[s.Name]; dup {
				p := item.path + ".name"
				d.add(Error, d.spec.Where(p), p, fmt.Sprintf("steps[%d] is named %q already", j, s.Name), "give each step its own name")
			} else {
				first[s.Name] = i
			}
		}
		switch {
		case hasRun && hasSh:
			d.add(Error, item.pos, item.path, "the step has both run and sh", "a step runs one command: keep run: or sh:, or make two steps")
		case !hasRun && !hasSh:
			d.add(Error, item.pos, item.path, "the step has neither run nor sh",
				`add run: ["/path/to/command", "arg"] or sh: with a shell script`)
		}
	}
	return out
}

// decodeWantedBy decodes wantedBy, where no value is not the empty list.
func decodeWantedBy(d *decoder, v value, h *Hook) {
	if isNull(v.node) {
		d.noValue(v, "write wantedBy: [] for no WantedBy=, or remove the line for the unit type's usual target")
		return
	}
	h.WantedBy, _ = d.strList(v, `["multi-user.target"]`)
}

// decodeScript decodes a step's sh: a text that may span lines, with no
// NUL in it.
func decodeScript(d *decoder, v value) string {
	s, _ := d.str(v, true)
	if strings.ContainsRune(s, 0) {
		d.add(Error, v.pos, v.path, "sh contains a NUL character", "remove it: no program argument can hold one")
	}
	return s
}

func encodePre(h *Hook) *yaml.Node {
	if len(h.Pre) == 0 {
		return nil
	}
	pre := &yaml.Node{Kind: yaml.SequenceNode}
	for _, c := range h.Pre {
		pre.Content = append(pre.Content, yamlnode.Words(c))
	}
	return pre
}

// encodeEnv writes the variables sorted by name.
func encodeEnv(h *Hook) *yaml.Node {
	return sortedMapping(h.Env, yamlnode.Str)
}

// encodeDirectives writes the sections sorted by name, each with its
// entries in order.
func encodeDirectives(h *Hook) *yaml.Node {
	return sortedMapping(h.Directives, list)
}

// sortedMapping writes m as a mapping sorted by key, so that encoding a
// spec twice gives the same bytes; nil for an empty m, which leaves the
// field out.
func sortedMapping[V any](m map[string]V, value func(V) *yaml.Node) *yaml.Node {
	if len(m) == 0 {
		return nil
	}
	n := &yaml.Node{Kind: yaml.MappingNode}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		yamlnode.Pairs(n, k, value(m[k]))
	}
	return n
}
