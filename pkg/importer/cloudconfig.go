package importer

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/yamlnode"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// ccImporter builds the storage hook of a cloud-config: write_files
// become files, users and groups accounts. Every other module is kept
// out with a warning.
type ccImporter struct {
	file    string
	diags   hooks.Diagnostics
	h       hooks.Hook
	origins hookOrigins
	// rest are the parts of the cloud-config that go to the leftovers.
	rest marks
	// locals are the contents that go beside the spec.
	locals *localFiles
	// groupPlaces are where each of h.Groups is written, index for index.
	groupPlaces []groupPlace
}

// groupPlace is where a group of the spec is written in the cloud-config:
// its name's node, its path for messages, and its path in the input.
type groupPlace struct {
	node *yaml.Node
	path string
	rest restPath
}

// move puts the part of the cloud-config at p into the leftovers, with a
// warning at n that says why.
func (c *ccImporter) move(n *yaml.Node, path string, p restPath, msg, hint string) {
	c.rest.add(p...)
	c.warn(n, path, leftoversPrefix+msg, hint)
}

func (c *ccImporter) origin(n *yaml.Node, path string) origin {
	return origin{pos: c.pos(n), path: path}
}

func (c *ccImporter) pos(n *yaml.Node) hooks.Position {
	return hooks.Position{File: c.file, Line: n.Line, Column: n.Column}
}

func (c *ccImporter) warn(n *yaml.Node, path, msg, hint string) {
	c.diags = append(c.diags, warn(c.pos(n), path, msg, hint))
}

func (c *ccImporter) fail(n *yaml.Node, path, msg, hint string) {
	c.diags = append(c.diags, hooks.Diagnostic{Severity: hooks.Error, Pos: c.pos(n), Path: path, Message: msg, Hint: hint})
}

func importCloudConfig(in Input) (*Result, hooks.Diagnostics) {
	c := &ccImporter{file: in.Name, locals: newLocalFiles(in)}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(in.Data))
	if err := yamlnode.Decode(dec, &doc); err != nil {
		return nil, hooks.Diagnostics{{Severity: hooks.Error, Pos: yamlErrPos(in.Name, err), Message: "not valid YAML: " + err.Error(),
			Hint: "a cloud-config is a YAML mapping after its #cloud-config line"}}
	}
	if len(doc.Content) == 0 {
		return &Result{Format: FormatCloudConfig}, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		c.fail(root, "", "a cloud-config must be a mapping, not "+yamlnode.KindName(root), "write its modules as keys: write_files:, users:, ...")
		return nil, c.diags
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "write_files":
			c.writeFiles(v)
		case "users":
			c.users(v)
		case "groups":
			c.groups(v)
		default:
			hint := moduleHints[k.Value]
			if hint == "" {
				hint = "render the spec with --merge of the leftovers, which keep it"
			}
			c.move(k, k.Value, restPath{k.Value}, "the cloud-init module "+k.Value+" has no hostprov equivalent", hint)
		}
	}
	c.ownGroups()
	if c.diags.HasErrors(false) {
		return nil, c.diags
	}
	res := &Result{Format: FormatCloudConfig, doc: root, rest: c.rest, Locals: c.locals.files}
	if c.h.HasStorage() {
		c.h.Name = storageHookName(in.setName, nil)
		res.Hooks = []hooks.Hook{c.h}
		res.origins = []hookOrigins{c.origins}
	}
	return res, c.diags
}

// moduleHints say what to do instead of a cloud-init module; a module
// not named has the default hint of hint().
var moduleHints = map[string]string{
	"runcmd":              "make each command a step of a command hook (steps: [{run: [...]}]) with when: Once",
	"bootcmd":             "make each command a step of a command hook with when: Always",
	"packages":            "install packages in a command hook, or render the spec with --merge of the leftovers, which keep it",
	"package_update":      "update packages in a command hook, or render the spec with --merge of the leftovers, which keep it",
	"package_upgrade":     "upgrade packages in a command hook, or render the spec with --merge of the leftovers, which keep it",
	"ssh_authorized_keys": "put the keys in a file on a hook, owned by the user, or render the spec with --merge of the leftovers, which keep them",
	"mounts":              "write mount units as hooks, or render the spec with --merge of the leftovers, which keep them",
	"hostname":            "write /etc/hostname as a file of a hook, or render the spec with --merge of the leftovers, which keep it",
}

func yamlErrPos(file string, err error) hooks.Position {
	var line int
	if _, e := fmt.Sscanf(strings.TrimPrefix(err.Error(), "yaml: "), "line %d:", &line); e == nil {
		return hooks.Position{File: file, Line: line}
	}
	return hooks.Position{File: file}
}

func (c *ccImporter) entries(v *yaml.Node, path, what string, f func(i int, item *yaml.Node, p string)) {
	if v.Kind != yaml.SequenceNode {
		if isNullNode(v) {
			return
		}
		c.fail(v, path, path+" must be a list, not "+yamlnode.KindName(v), "write each "+what+" as an entry \"- ...\"")
		return
	}
	for i, item := range v.Content {
		f(i, item, fmt.Sprintf("%s[%d]", path, i))
	}
}

func isNullNode(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// scalar is the value of a scalar node, or false with an error.
func (c *ccImporter) scalar(n *yaml.Node, path string) (string, bool) {
	if n.Kind != yaml.ScalarNode || isNullNode(n) {
		c.fail(n, path, path+" must be a value, not "+yamlnode.KindName(n), "write it as a string")
		return "", false
	}
	return n.Value, true
}

func (c *ccImporter) writeFiles(v *yaml.Node) {
	c.entries(v, "write_files", "file", c.writeFile)
}

// writeFile puts the write_files entry item (the i-th, at p) on the
// storage hook.
func (c *ccImporter) writeFile(i int, item *yaml.Node, p string) {
	// What a spec cannot say of a file takes the whole entry to the
	// leftovers: a merge takes an entry of a path whole.
	entry := restPath{"write_files", i}
	if item.Kind != yaml.MappingNode {
		c.fail(item, p, "a write_files entry must be a mapping, not "+yamlnode.KindName(item), "write it as {path: ..., content: ...}")
		return
	}
	var f hooks.File
	if v := mapValue(item, "path"); v != nil && v.Kind == yaml.ScalarNode {
		f.Path = v.Value // for messages about fields before it
	}
	var content, encoding string
	// binary is content given as YAML's !!binary: base64 of the
	// bytes, which cloud-init's YAML reading decodes before the
	// encoding is applied.
	binary := false
	ok := true
	for j := 0; j+1 < len(item.Content); j += 2 {
		k, val := item.Content[j], item.Content[j+1]
		fp := p + "." + k.Value
		switch k.Value {
		case "path":
			f.Path, ok = c.scalar(val, fp)
		case "content":
			content, ok = c.scalar(val, fp)
			binary = val.ShortTag() == "!!binary"
		case "encoding":
			encoding, ok = c.scalar(val, fp)
		case "permissions":
			f.Mode, ok = c.permissions(val, fp)
		case "owner":
			f.User, f.Group, ok = c.owner(val, p, entry, f.Path)
		case "defer":
			// hostprov writes a file after the users it needs exist.
		case "append":
			if val.Value == "true" {
				c.move(k, p, entry, f.Path+": append adds to a file, and a hostprov file is the whole file",
					"write the whole file as the hook's file, or append in a command hook")
				return
			}
		case "source":
			c.move(k, p, entry, f.Path+": a file from a source URL, which cloud-init fetches without a hash and a hostprov file from a source needs one",
				"give the file as a hook's file with source: and verification: {hash: sha512-HEX}")
			return
		default:
			c.move(k, p, entry, f.Path+": "+k.Value+" of a write_files entry has no hostprov equivalent",
				"the fields of a hostprov file are path, contents, local, source, verification, mode, user, group and overwrite")
			return
		}
		if !ok {
			return
		}
	}
	if f.Path == "" {
		c.fail(item, p, "the write_files entry has no path", "add path: with where the file goes")
		return
	}
	data, ok := c.decodeContent(item, p, content, encoding, binary)
	if !ok {
		return
	}
	if utf8.Valid(data) {
		s := string(data)
		f.Contents = &s
	} else if f.Local = c.locals.add(f.Path, data); f.Local == "" {
		c.move(item, p, entry, f.Path+": the contents are not UTF-8 text, which a hook spec's contents: cannot carry, and the spec goes to no directory for a local: file to be beside it",
			"import with -o FILE: such contents go beside it as local: files")
		return
	}
	c.h.Files = append(c.h.Files, f)
	c.origins.files = append(c.origins.files, c.origin(item, p))
}

// permissions is the mode of a write_files entry's permissions (val, at
// fp), as cloud-init applies it; false, with an error, when it is none.
func (c *ccImporter) permissions(val *yaml.Node, fp string) (*uint32, bool) {
	s, good := c.scalar(val, fp)
	if !good {
		return nil, false
	}
	m, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimPrefix(s, "0o"), "0"), 8, 32)
	if s == "0" {
		m, err = 0, nil
	}
	// Unquoted and without a leading 0, YAML gives cloud-init
	// an integer, which it applies as the number it is: 600
	// is mode 01130, and 384 is 0600.
	dec, decErr := strconv.ParseUint(s, 10, 32)
	integer := val.ShortTag() == "!!int" && val.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) == 0 &&
		decErr == nil && s[0] != '0'
	if integer && (err != nil || m > 0o7777) && dec <= 0o7777 {
		m, err = dec, nil // not octal: what cloud-init applies
	}
	if err != nil || m > 0o7777 {
		c.fail(val, fp, fmt.Sprintf("permissions %q is not an octal mode", s), "write it as cloud-init documents it, such as '0644'")
		return nil, false
	}
	if integer && m != dec {
		c.warn(val, fp, fmt.Sprintf("permissions: %s is an integer, which cloud-init applies as the decimal number it is, mode 0%o; the spec keeps 0%o, the digits read in octal",
			s, dec, m), fmt.Sprintf("check which is meant: for 0%o write mode: 0%o in the spec; in a cloud-config quote a mode ('0%o'), as cloud-init documents", dec, dec, m))
	}
	mode := uint32(m)
	return &mode, true
}

// owner is the user and group of a write_files entry's owner (val, of
// the entry at p, the file at path), root being left out; false, with the
// entry moved to the leftovers, when a spec cannot name them.
func (c *ccImporter) owner(val *yaml.Node, p string, entry restPath, path string) (user, group string, ok bool) {
	s, good := c.scalar(val, p+".owner")
	if !good {
		return "", "", false
	}
	user, group, _ = strings.Cut(s, ":")
	for _, o := range []string{user, group} {
		if problem := hooks.OwnerProblem(o); o != "" && problem != "" {
			c.move(val, p, entry, fmt.Sprintf("%s: the owner %q is not one a hook spec can name: %s", path, o, problem),
				"rename the account, or give its numeric id")
			return "", "", false
		}
	}
	if user == "root" {
		user = ""
	}
	if group == "root" {
		group = ""
	}
	return user, group, true
}

// decodeContent is a write_files entry's content (of item, at p) decoded
// as its encoding says; false, with an error, when it does not decode.
func (c *ccImporter) decodeContent(item *yaml.Node, p, content, encoding string, binary bool) ([]byte, bool) {
	data := []byte(content)
	if binary {
		b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(content), ""))
		if err != nil {
			c.fail(item, p+".content", "the !!binary content is not base64: "+err.Error(), "fix the content")
			return nil, false
		}
		data = b
	}
	switch strings.ToLower(encoding) {
	case "", "text/plain":
	case "b64", "base64":
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(data)))
		if err != nil {
			c.fail(item, p+".content", "the content is not base64: "+err.Error(), "fix the content, or its encoding")
			return nil, false
		}
		data = b
	case "gz", "gzip", "gz+b64", "gz+base64", "gzip+b64", "gzip+base64":
		if strings.Contains(encoding, "b") {
			b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(data)))
			if err != nil {
				c.fail(item, p+".content", "the content is not base64: "+err.Error(), "fix the content, or its encoding")
				return nil, false
			}
			data = b
		}
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err == nil {
			data, err = io.ReadAll(zr)
		}
		if err != nil {
			c.fail(item, p+".content", "the content does not decompress: "+err.Error(), "fix the content, or its encoding")
			return nil, false
		}
	default:
		c.fail(item, p+".encoding", fmt.Sprintf("unknown encoding %q", encoding), "cloud-init knows b64, gzip, gz+b64 and text/plain")
		return nil, false
	}
	return data, true
}

// userFieldHints say, for cloud-init user fields hostprov lacks, what
// to do instead.
var ccUserHints = map[string]string{
	"plain_text_passwd": "hostprov writes no clear-text password: make a hash with mkpasswd -m yescrypt or openssl passwd -6, and give it as hashed_passwd",
	"sudo":              "write a file under /etc/sudoers.d on the hook",
	"lock_passwd":       "hostprov's outputs lock a user's password unless the user has a passwordHash: give the hash as hashed_passwd",
	"gecos":             "the comment of an account is not kept; set it with a command hook (usermod -c)",
}

// ccUserDefaults are cloud-init user fields at the value every output
// gives them anyway, which lose nothing when left out.
var ccUserDefaults = map[string]bool{"lock_passwd": true}

// yaml11Bool is a boolean as cloud-init's YAML (1.1) reads it.
func yaml11Bool(n *yaml.Node) (v, ok bool) {
	if n == nil || n.Kind != yaml.ScalarNode || n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0 {
		return false, false
	}
	switch strings.ToLower(n.Value) {
	case "true", "yes", "on":
		return true, true
	case "false", "no", "off":
		return false, true
	}
	return false, false
}

func (c *ccImporter) users(v *yaml.Node) {
	c.entries(v, "users", "user", func(i int, item *yaml.Node, p string) {
		entry := restPath{"users", i}
		if item.Kind == yaml.ScalarNode {
			c.move(item, p, entry, fmt.Sprintf("the user %q: cloud-init's distribution default user has no hostprov equivalent", item.Value),
				"name the user in full, as {name: ...}, to create it")
			return
		}
		if item.Kind != yaml.MappingNode {
			c.fail(item, p, "a users entry must be a mapping, not "+yamlnode.KindName(item), "write it as {name: ...}")
			return
		}
		var u hooks.User
		for j := 0; j+1 < len(item.Content); j += 2 {
			k, val := item.Content[j], item.Content[j+1]
			if !c.userField(&u, item, k, val, p+"."+k.Value, entry) {
				return
			}
		}
		if problem := hooks.AccountNameProblem(u.Name); problem != "" {
			c.move(item, p+".name", entry, fmt.Sprintf("the user name %q is not one systemd-sysusers accepts: %s", u.Name, problem),
				"rename the user: a letter or _ first, then letters, digits, _ or -")
			return
		}
		c.h.Users = append(c.h.Users, u)
		c.origins.users = append(c.origins.users, c.origin(item, p))
	})
}

// userField sets the field k (its value val, at fp) of the users entry
// item on u; false, with an error, when the entry cannot be a user.
func (c *ccImporter) userField(u *hooks.User, item, k, val *yaml.Node, fp string, entry restPath) bool {
	switch k.Value {
	case "name":
		s, ok := c.scalar(val, fp)
		if !ok {
			return false
		}
		u.Name = s
	case "uid":
		s, ok := c.scalar(val, fp)
		if !ok {
			return false
		}
		id, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			c.fail(val, fp, fmt.Sprintf("uid %q is not a number", s), "write the uid as a number")
			return false
		}
		v := uint32(id)
		u.UID = &v
	case "system":
		u.System = val.Value == "true"
	case "homedir":
		u.Home, _ = c.scalar(val, fp)
	case "shell":
		u.Shell, _ = c.scalar(val, fp)
	case "primary_group":
		u.PrimaryGroup, _ = c.scalar(val, fp)
	case "no_create_home":
		if b, ok := yaml11Bool(val); ok {
			u.NoCreateHome = b
		} else {
			c.move(k, fp, append(entry, k.Value), "no_create_home of the user "+u.Name+" is not a boolean", "write no_create_home: true or false")
		}
	case "ssh_authorized_keys":
		if val.Kind != yaml.SequenceNode {
			c.move(val, fp, append(entry, k.Value), "ssh_authorized_keys of the user "+u.Name+" is not a list", "write it as a list of keys")
			return true
		}
		for ki, key := range val.Content {
			if problem := hooks.AuthorizedKeyProblem(key.Value); key.Kind != yaml.ScalarNode || problem != "" {
				c.move(key, fmt.Sprintf("%s[%d]", fp, ki), append(entry, k.Value, ki), "a key of the user "+u.Name+": "+problem, "give the line of the key's .pub file")
				continue
			}
			u.SSHAuthorizedKeys = append(u.SSHAuthorizedKeys, key.Value)
		}
	case "hashed_passwd", "passwd":
		// passwd is cloud-init's older name of the hash.
		s, ok := c.scalar(val, fp)
		if !ok {
			return true
		}
		if problem := hooks.PasswordHashProblem(s); problem != "" {
			c.move(val, fp, append(entry, k.Value), "the password of the user "+u.Name+": "+problem,
				"make a hash with mkpasswd -m yescrypt or openssl passwd -6, and give it as hashed_passwd")
			return true
		}
		u.PasswordHash = s
		if b, ok := yaml11Bool(mapValue(item, "lock_passwd")); !ok || b {
			c.warn(val, fp, "the password of the user "+u.Name+" is kept as passwordHash, which hostprov's outputs leave usable; cloud-init locks it, as lock_passwd is not false",
				"write lock_passwd: false to log in with it, or leave the hash out")
		}
	case "groups":
		switch val.Kind {
		case yaml.ScalarNode:
			for _, g := range strings.Split(val.Value, ",") {
				if g = strings.TrimSpace(g); g != "" {
					u.Groups = append(u.Groups, g)
				}
			}
		case yaml.SequenceNode:
			for _, g := range val.Content {
				u.Groups = append(u.Groups, g.Value)
			}
		}
	default:
		if b, ok := yaml11Bool(val); k.Value == "lock_passwd" && ok && !b && (mapValue(item, "hashed_passwd") != nil || mapValue(item, "passwd") != nil) {
			return true // the hash is the user's password: what hostprov's outputs write
		}
		if def, known := ccUserDefaults[k.Value]; known {
			if b, ok := yaml11Bool(val); ok && b == def {
				return true
			}
		}
		hint := ccUserHints[k.Value]
		if hint == "" {
			hint = "a hostprov user has name, uid, system, home, shell, groups, sshAuthorizedKeys, passwordHash, primaryGroup and noCreateHome"
		}
		c.move(k, fp, append(entry, k.Value), k.Value+" of the user "+u.Name+" has no hostprov equivalent", hint)
	}
	return true
}

// groups reads cloud-init's groups: a list of names, or of mappings of a
// name to its members.
func (c *ccImporter) groups(v *yaml.Node) {
	c.entries(v, "groups", "group", func(i int, item *yaml.Node, p string) {
		var names []*yaml.Node
		switch item.Kind {
		case yaml.ScalarNode:
			names = append(names, item)
		case yaml.MappingNode:
			for j := 0; j+1 < len(item.Content); j += 2 {
				names = append(names, item.Content[j])
				if m := item.Content[j+1]; !isNullNode(m) {
					c.move(m, p+"."+item.Content[j].Value, restPath{"groups", i}, "the members of the group "+item.Content[j].Value+": a hostprov group has no members list",
						"give each member groups: ["+item.Content[j].Value+"] in its user entry")
				}
			}
		default:
			c.fail(item, p, "a groups entry must be a name or a mapping, not "+yamlnode.KindName(item), "write it as a name, or {name: [members]}")
			return
		}
		for _, n := range names {
			if problem := hooks.AccountNameProblem(n.Value); problem != "" {
				c.move(n, p, restPath{"groups", i}, fmt.Sprintf("the group name %q is not one systemd-sysusers accepts: %s", n.Value, problem),
					"rename the group: a letter or _ first, then letters, digits, _ or -")
				continue
			}
			c.h.Groups = append(c.h.Groups, hooks.Group{Name: n.Value})
			c.origins.groups = append(c.origins.groups, c.origin(n, p))
			gp := groupPlace{node: n, path: p, rest: restPath{"groups", i}}
			if item.Kind == yaml.MappingNode {
				gp.rest = append(gp.rest, n.Value)
			}
			c.groupPlaces = append(c.groupPlaces, gp)
		}
	})
}

// ownGroups takes out of the spec each group named as a user of the spec
// without a primary_group, and puts it into the leftovers as written. In
// the spec it would be that user's primary group in every output
// (compile.Storage.PrimaryGroup: cloud-init's useradd, like Ignition's,
// refuses to create a user whose name is a group's that exists, without
// --gid), a primary_group the cloud-config does not have. Without it, each
// output gives the user a group of its own name, which is what the
// cloud-config most likely means, and render --merge of the leftovers
// gives the cloud-config back as it is.
func (c *ccImporter) ownGroups() {
	own := map[string]bool{}
	for _, u := range c.h.Users {
		if u.PrimaryGroup == "" {
			own[u.Name] = true
		}
	}
	var groups []hooks.Group
	var origins []origin
	for i, g := range c.h.Groups {
		gp := c.groupPlaces[i]
		if own[g.Name] {
			c.move(gp.node, gp.path, gp.rest, "the group "+g.Name+" is named as a user the cloud-config creates without a primary_group: in the spec, hostprov would make it that user's primary group, which the cloud-config does not say; without it, the user gets a group of its own name",
				"if the group is the user's own, write primary_group: "+g.Name+" on the user in the cloud-config (useradd refuses to create the user otherwise, as the group exists) and import it again")
			continue
		}
		groups = append(groups, g)
		origins = append(origins, c.origins.groups[i])
	}
	c.h.Groups, c.origins.groups = groups, origins
}

// cloudConfigRest writes the marked parts of a cloud-config (root, its
// mapping) as a cloud-config; nil when nothing is marked.
func cloudConfigRest(root *yaml.Node, ms marks) ([]byte, error) {
	if len(ms) == 0 || root == nil {
		return nil, nil
	}
	n := projectYAML(root, ms, false)
	if n == nil {
		return nil, nil
	}
	// The input's own #cloud-config line is a comment of its first key,
	// which may be among the leftovers: the header is written once.
	if len(n.Content) > 0 {
		k := *n.Content[0]
		k.HeadComment = strings.TrimPrefix(strings.TrimPrefix(k.HeadComment, "#cloud-config"), "\n")
		n.Content[0] = &k
	}
	var buf bytes.Buffer
	buf.WriteString("#cloud-config\n")
	if err := yamlnode.Encode(&buf, n); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
