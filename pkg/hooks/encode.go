package hooks

import (
	"bytes"
	"sort"

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
	yamlnode.Pairs(doc, "apiVersion", yamlnode.Str(APIVersion), "kind", yamlnode.Str(Kind))
	if name != "" {
		yamlnode.Pairs(doc, "metadata", yamlnode.Pairs(&yaml.Node{Kind: yaml.MappingNode}, "name", yamlnode.Str(name)))
	}
	seq := &yaml.Node{Kind: yaml.SequenceNode}
	for i := range hs {
		seq.Content = append(seq.Content, encodeHook(&hs[i]))
	}
	yamlnode.Pairs(doc, "hooks", seq)
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
	yamlnode.Pairs(n, "name", yamlnode.Str(h.Name))
	if h.Description != "" {
		yamlnode.Pairs(n, "description", yamlnode.Str(h.Description))
	}
	if h.Enabled != nil {
		yamlnode.Pairs(n, "enabled", yamlnode.Bool(*h.Enabled))
	}
	if h.Mask {
		yamlnode.Pairs(n, "mask", yamlnode.Bool(true))
	}
	if h.UseRawName {
		yamlnode.Pairs(n, "useRawName", yamlnode.Bool(true))
	}
	if h.UseRawManifest {
		yamlnode.Pairs(n, "useRawManifest", yamlnode.Bool(true))
	}
	if h.Manifest != "" {
		yamlnode.Pairs(n, "manifest", yamlnode.Text([]byte(h.Manifest)))
	}
	if h.ExactBytes {
		yamlnode.Pairs(n, "exactBytes", yamlnode.Bool(true))
	}
	optList(n, "requires", h.Requires)
	optList(n, "wants", h.Wants)
	optList(n, "before", h.Before)
	optList(n, "after", h.After)
	if h.WantedBy != nil {
		yamlnode.Pairs(n, "wantedBy", yamlnode.Words(h.WantedBy))
	}
	optStr(n, "type", h.Type)
	optList(n, "exec", h.Exec)
	if len(h.Pre) > 0 {
		pre := &yaml.Node{Kind: yaml.SequenceNode}
		for _, c := range h.Pre {
			pre.Content = append(pre.Content, yamlnode.Words(c))
		}
		yamlnode.Pairs(n, "pre", pre)
	}
	if h.ExpandEnv {
		yamlnode.Pairs(n, "expandEnv", yamlnode.Bool(true))
	}
	if h.Specifiers {
		yamlnode.Pairs(n, "specifiers", yamlnode.Bool(true))
	}
	if h.RemainAfterExit != nil {
		yamlnode.Pairs(n, "remainAfterExit", yamlnode.Bool(*h.RemainAfterExit))
	}
	if len(h.Env) > 0 {
		env := &yaml.Node{Kind: yaml.MappingNode}
		for _, k := range sortedKeys(h.Env) {
			yamlnode.Pairs(env, k, yamlnode.Str(h.Env[k]))
		}
		yamlnode.Pairs(n, "env", env)
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
				yamlnode.Pairs(e, "run", yamlnode.Words(s.Run))
			}
			if s.Sh != "" {
				yamlnode.Pairs(e, "sh", text(s.Sh))
			}
			steps.Content = append(steps.Content, e)
		}
		yamlnode.Pairs(n, "steps", steps)
	}
	optStr(n, "when", h.When)
	optStr(n, "deviceTimeout", h.DeviceTimeout)
	if len(h.Directives) > 0 {
		ds := &yaml.Node{Kind: yaml.MappingNode}
		for _, sec := range sortedKeys(h.Directives) {
			yamlnode.Pairs(ds, sec, list(h.Directives[sec]))
		}
		yamlnode.Pairs(n, "directives", ds)
	}
	if len(h.Dropins) > 0 {
		ds := &yaml.Node{Kind: yaml.SequenceNode}
		for _, d := range h.Dropins {
			ds.Content = append(ds.Content, yamlnode.Pairs(&yaml.Node{Kind: yaml.MappingNode}, "name", yamlnode.Str(d.Name), "contents", yamlnode.Text([]byte(d.Contents))))
		}
		yamlnode.Pairs(n, "dropins", ds)
	}
	encodeStorage(n, h)
	optStr(n, "disruption", h.Disruption)
	return n
}

func encodeStorage(n *yaml.Node, h *Hook) {
	if len(h.Files) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, f := range h.Files {
			e := yamlnode.Pairs(&yaml.Node{Kind: yaml.MappingNode}, "path", yamlnode.Str(f.Path))
			switch {
			case f.Contents != nil:
				yamlnode.Pairs(e, "contents", text(*f.Contents))
			case f.Local != "":
				yamlnode.Pairs(e, "local", yamlnode.Str(f.Local))
			case f.Source != "":
				yamlnode.Pairs(e, "source", yamlnode.Str(f.Source))
			}
			if f.Hash != "" {
				yamlnode.Pairs(e, "verification", yamlnode.Pairs(&yaml.Node{Kind: yaml.MappingNode}, "hash", yamlnode.Str(f.Hash)))
			}
			if f.Mode != nil {
				yamlnode.Pairs(e, "mode", yamlnode.Mode(*f.Mode))
			}
			optOwner(e, "user", f.User)
			optOwner(e, "group", f.Group)
			if f.Overwrite {
				yamlnode.Pairs(e, "overwrite", yamlnode.Bool(true))
			}
			seq.Content = append(seq.Content, e)
		}
		yamlnode.Pairs(n, "files", seq)
	}
	if len(h.Directories) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, d := range h.Directories {
			e := yamlnode.Pairs(&yaml.Node{Kind: yaml.MappingNode}, "path", yamlnode.Str(d.Path))
			if d.Mode != nil {
				yamlnode.Pairs(e, "mode", yamlnode.Mode(*d.Mode))
			}
			optOwner(e, "user", d.User)
			optOwner(e, "group", d.Group)
			seq.Content = append(seq.Content, e)
		}
		yamlnode.Pairs(n, "directories", seq)
	}
	if len(h.Links) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, l := range h.Links {
			e := yamlnode.Pairs(&yaml.Node{Kind: yaml.MappingNode}, "path", yamlnode.Str(l.Path), "target", yamlnode.Str(l.Target))
			if l.Hard {
				yamlnode.Pairs(e, "hard", yamlnode.Bool(true))
			}
			optOwner(e, "user", l.User)
			optOwner(e, "group", l.Group)
			if l.Overwrite {
				yamlnode.Pairs(e, "overwrite", yamlnode.Bool(true))
			}
			seq.Content = append(seq.Content, e)
		}
		yamlnode.Pairs(n, "links", seq)
	}
	if len(h.Users) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, u := range h.Users {
			e := yamlnode.Pairs(&yaml.Node{Kind: yaml.MappingNode}, "name", yamlnode.Str(u.Name))
			if u.UID != nil {
				yamlnode.Pairs(e, "uid", yamlnode.Uint(*u.UID))
			}
			if u.System {
				yamlnode.Pairs(e, "system", yamlnode.Bool(true))
			}
			optStr(e, "home", u.Home)
			optStr(e, "shell", u.Shell)
			if len(u.Groups) > 0 {
				yamlnode.Pairs(e, "groups", yamlnode.Words(u.Groups))
			}
			if len(u.SSHAuthorizedKeys) > 0 {
				keys := &yaml.Node{Kind: yaml.SequenceNode}
				for _, k := range u.SSHAuthorizedKeys {
					keys.Content = append(keys.Content, yamlnode.Str(k))
				}
				yamlnode.Pairs(e, "sshAuthorizedKeys", keys)
			}
			optStr(e, "passwordHash", u.PasswordHash)
			optStr(e, "primaryGroup", u.PrimaryGroup)
			if u.NoCreateHome {
				yamlnode.Pairs(e, "noCreateHome", yamlnode.Bool(true))
			}
			seq.Content = append(seq.Content, e)
		}
		yamlnode.Pairs(n, "users", seq)
	}
	if len(h.Groups) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, g := range h.Groups {
			e := yamlnode.Pairs(&yaml.Node{Kind: yaml.MappingNode}, "name", yamlnode.Str(g.Name))
			if g.GID != nil {
				yamlnode.Pairs(e, "gid", yamlnode.Uint(*g.GID))
			}
			if g.System {
				yamlnode.Pairs(e, "system", yamlnode.Bool(true))
			}
			seq.Content = append(seq.Content, e)
		}
		yamlnode.Pairs(n, "groups", seq)
	}
}

// text is a string that may span lines: a literal block when it does,
// and YAML keeps its bytes that way, a plain string otherwise.
func text(s string) *yaml.Node {
	if bytes.IndexByte([]byte(s), '\n') >= 0 {
		return yamlnode.Text([]byte(s))
	}
	return yamlnode.Str(s)
}

// optOwner writes a user or group: a decimal id as a number, a name as a
// string.
func optOwner(n *yaml.Node, key, v string) {
	if v == "" {
		return
	}
	if digitsRE.MatchString(v) {
		yamlnode.Pairs(n, key, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: v})
		return
	}
	yamlnode.Pairs(n, key, yamlnode.Str(v))
}

func optStr(n *yaml.Node, key, v string) {
	if v != "" {
		yamlnode.Pairs(n, key, yamlnode.Str(v))
	}
}

func optList(n *yaml.Node, key string, vs []string) {
	if len(vs) > 0 {
		yamlnode.Pairs(n, key, yamlnode.Words(vs))
	}
}

func list(vs []string) *yaml.Node {
	l := &yaml.Node{Kind: yaml.SequenceNode}
	for _, v := range vs {
		l.Content = append(l.Content, yamlnode.Str(v))
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
