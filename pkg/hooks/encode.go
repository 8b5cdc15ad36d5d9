package hooks

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/yamlnode"
)

// Encode writes a hook spec document named name (metadata.name; empty for
// none) holding hs, in hostprov's canonical form: the fields of a hook and
// of its entries in the order they are documented (HookFields, FileFields,
// ...), fields at their default value left out, maps (env, directives)
// with their keys sorted, indented by two spaces, text that a person reads
// (manifests, drop-ins, file contents, shell steps) as literal blocks where
// YAML keeps their bytes (see yamlnode.Text) and double-quoted otherwise.
// Parse reads the document back as the same hooks; the tests prove it.
//
// The document is built as a yaml.v3 node tree, never as text, so that
// every value is quoted as YAML needs it.
func Encode(name string, hs []Hook) ([]byte, error) {
	doc := &yaml.Node{Kind: yaml.MappingNode}
	pairs(doc, "apiVersion", str(APIVersion), "kind", str(Kind))
	if name != "" {
		pairs(doc, "metadata", pairs(&yaml.Node{Kind: yaml.MappingNode}, "name", str(name)))
	}
	seq := &yaml.Node{Kind: yaml.SequenceNode}
	for i := range hs {
		seq.Content = append(seq.Content, encodeHook(&hs[i]))
	}
	pairs(doc, "hooks", seq)
	var b bytes.Buffer
	e := yaml.NewEncoder(&b)
	e.SetIndent(2)
	if err := e.Encode(doc); err != nil {
		return nil, err
	}
	if err := e.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func encodeHook(h *Hook) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	pairs(n, "name", str(h.Name))
	if h.Description != "" {
		pairs(n, "description", str(h.Description))
	}
	if h.Enabled != nil {
		pairs(n, "enabled", boolean(*h.Enabled))
	}
	if h.Mask {
		pairs(n, "mask", boolean(true))
	}
	if h.UseRawName {
		pairs(n, "useRawName", boolean(true))
	}
	if h.UseRawManifest {
		pairs(n, "useRawManifest", boolean(true))
	}
	if h.Manifest != "" {
		pairs(n, "manifest", yamlnode.Text([]byte(h.Manifest)))
	}
	optList(n, "requires", h.Requires)
	optList(n, "wants", h.Wants)
	optList(n, "before", h.Before)
	optList(n, "after", h.After)
	if h.WantedBy != nil {
		pairs(n, "wantedBy", flowList(h.WantedBy))
	}
	optStr(n, "type", h.Type)
	optList(n, "exec", h.Exec)
	if len(h.Pre) > 0 {
		pre := &yaml.Node{Kind: yaml.SequenceNode}
		for _, c := range h.Pre {
			pre.Content = append(pre.Content, flowList(c))
		}
		pairs(n, "pre", pre)
	}
	if h.ExpandEnv {
		pairs(n, "expandEnv", boolean(true))
	}
	if h.Specifiers {
		pairs(n, "specifiers", boolean(true))
	}
	if h.RemainAfterExit != nil {
		pairs(n, "remainAfterExit", boolean(*h.RemainAfterExit))
	}
	if len(h.Env) > 0 {
		env := &yaml.Node{Kind: yaml.MappingNode}
		for _, k := range sortedKeys(h.Env) {
			pairs(env, k, str(h.Env[k]))
		}
		pairs(n, "env", env)
	}
	optStr(n, "environmentFile", h.EnvironmentFile)
	optStr(n, "workingDirectory", h.WorkingDirectory)
	optStr(n, "user", h.User)
	optStr(n, "group", h.Group)
	optStr(n, "restart", h.Restart)
	optStr(n, "restartSec", h.RestartSec)
	optStr(n, "timeoutStartSec", h.TimeoutStartSec)
	optStr(n, "timeoutStopSec", h.TimeoutStopSec)
	optStr(n, "stateDirectory", h.StateDirectory)
	optStr(n, "logsDirectory", h.LogsDirectory)
	optStr(n, "configurationDirectory", h.ConfigurationDirectory)
	if len(h.Steps) > 0 {
		steps := &yaml.Node{Kind: yaml.SequenceNode}
		for _, s := range h.Steps {
			e := &yaml.Node{Kind: yaml.MappingNode}
			optStr(e, "name", s.Name)
			if len(s.Run) > 0 {
				pairs(e, "run", flowList(s.Run))
			}
			if s.Sh != "" {
				pairs(e, "sh", text(s.Sh))
			}
			steps.Content = append(steps.Content, e)
		}
		pairs(n, "steps", steps)
	}
	optStr(n, "when", h.When)
	if len(h.Directives) > 0 {
		ds := &yaml.Node{Kind: yaml.MappingNode}
		for _, sec := range sortedKeys(h.Directives) {
			pairs(ds, sec, list(h.Directives[sec]))
		}
		pairs(n, "directives", ds)
	}
	if len(h.Dropins) > 0 {
		ds := &yaml.Node{Kind: yaml.SequenceNode}
		for _, d := range h.Dropins {
			ds.Content = append(ds.Content, pairs(&yaml.Node{Kind: yaml.MappingNode}, "name", str(d.Name), "contents", yamlnode.Text([]byte(d.Contents))))
		}
		pairs(n, "dropins", ds)
	}
	encodeStorage(n, h)
	return n
}

func encodeStorage(n *yaml.Node, h *Hook) {
	if len(h.Files) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, f := range h.Files {
			e := pairs(&yaml.Node{Kind: yaml.MappingNode}, "path", str(f.Path))
			switch {
			case f.Contents != nil:
				pairs(e, "contents", text(*f.Contents))
			case f.Local != "":
				pairs(e, "local", str(f.Local))
			case f.Source != "":
				pairs(e, "source", str(f.Source))
			}
			if f.Hash != "" {
				pairs(e, "verification", pairs(&yaml.Node{Kind: yaml.MappingNode}, "hash", str(f.Hash)))
			}
			if f.Mode != nil {
				pairs(e, "mode", mode(*f.Mode))
			}
			optOwner(e, "user", f.User)
			optOwner(e, "group", f.Group)
			if f.Overwrite {
				pairs(e, "overwrite", boolean(true))
			}
			seq.Content = append(seq.Content, e)
		}
		pairs(n, "files", seq)
	}
	if len(h.Directories) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, d := range h.Directories {
			e := pairs(&yaml.Node{Kind: yaml.MappingNode}, "path", str(d.Path))
			if d.Mode != nil {
				pairs(e, "mode", mode(*d.Mode))
			}
			optOwner(e, "user", d.User)
			optOwner(e, "group", d.Group)
			seq.Content = append(seq.Content, e)
		}
		pairs(n, "directories", seq)
	}
	if len(h.Links) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, l := range h.Links {
			e := pairs(&yaml.Node{Kind: yaml.MappingNode}, "path", str(l.Path), "target", str(l.Target))
			if l.Hard {
				pairs(e, "hard", boolean(true))
			}
			seq.Content = append(seq.Content, e)
		}
		pairs(n, "links", seq)
	}
	if len(h.Users) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, u := range h.Users {
			e := pairs(&yaml.Node{Kind: yaml.MappingNode}, "name", str(u.Name))
			if u.UID != nil {
				pairs(e, "uid", integer(*u.UID))
			}
			if u.System {
				pairs(e, "system", boolean(true))
			}
			optStr(e, "home", u.Home)
			optStr(e, "shell", u.Shell)
			if len(u.Groups) > 0 {
				pairs(e, "groups", flowList(u.Groups))
			}
			seq.Content = append(seq.Content, e)
		}
		pairs(n, "users", seq)
	}
	if len(h.Groups) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, g := range h.Groups {
			e := pairs(&yaml.Node{Kind: yaml.MappingNode}, "name", str(g.Name))
			if g.GID != nil {
				pairs(e, "gid", integer(*g.GID))
			}
			if g.System {
				pairs(e, "system", boolean(true))
			}
			seq.Content = append(seq.Content, e)
		}
		pairs(n, "groups", seq)
	}
}

func pairs(n *yaml.Node, kv ...any) *yaml.Node {
	for i := 0; i < len(kv); i += 2 {
		n.Content = append(n.Content, str(kv[i].(string)), kv[i+1].(*yaml.Node))
	}
	return n
}

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// text is a string that may span lines: a literal block when it does,
// and YAML keeps its bytes that way, a plain string otherwise.
func text(s string) *yaml.Node {
	if bytes.IndexByte([]byte(s), '\n') >= 0 {
		return yamlnode.Text([]byte(s))
	}
	return str(s)
}

func boolean(b bool) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(b)}
}

func integer(v uint32) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatUint(uint64(v), 10)}
}

// mode is a mode as the spec documents it: octal with a leading 0, at
// least four digits (0644, 07777).
func mode(m uint32) *yaml.Node {
	s := fmt.Sprintf("%04o", m)
	if s[0] != '0' {
		s = "0" + s
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: s}
}

// optOwner writes a user or group: a decimal id as a number, a name as a
// string.
func optOwner(n *yaml.Node, key, v string) {
	if v == "" {
		return
	}
	if digitsRE.MatchString(v) {
		pairs(n, key, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: v})
		return
	}
	pairs(n, key, str(v))
}

func optStr(n *yaml.Node, key, v string) {
	if v != "" {
		pairs(n, key, str(v))
	}
}

func optList(n *yaml.Node, key string, vs []string) {
	if len(vs) > 0 {
		pairs(n, key, flowList(vs))
	}
}

// flowList is a short list of words, written on one line ([a, b]).
func flowList(vs []string) *yaml.Node {
	l := list(vs)
	l.Style = yaml.FlowStyle
	return l
}

func list(vs []string) *yaml.Node {
	l := &yaml.Node{Kind: yaml.SequenceNode}
	for _, v := range vs {
		l.Content = append(l.Content, str(v))
	}
	return l
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
