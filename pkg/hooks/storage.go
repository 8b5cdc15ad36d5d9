package hooks

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/suggest"
	"github.com/hostprov/hostprov/internal/yamlnode"
)

var (
	fileFields         = []string{"path", "contents", "local", "source", "verification", "mode", "user", "group", "overwrite"}
	directoryFields    = []string{"path", "mode", "user", "group"}
	linkFields         = []string{"path", "target", "hard", "user", "group", "overwrite"}
	verificationFields = []string{"hash"}

	// storageFields are the hook fields that put things on the machine
	// besides the unit.
	storageFields = []string{"files", "directories", "links", "users", "groups"}

	hashRE = regexp.MustCompile(`^(sha256-[0-9a-f]{64}|sha512-[0-9a-f]{128})$`)
	// ownerNameRE is what useradd and systemd-sysusers accept as a user
	// or group name, give or take the trailing $ of machine accounts.
	ownerNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*\$?$`)
	octalRE     = regexp.MustCompile(`^0o?[0-7]+$`)
	digitsRE    = regexp.MustCompile(`^[0-9]+$`)
)

// FileFields, DirectoryFields and LinkFields are the fields of an entry of
// a hook's files, directories and links, in the order they are documented.
func FileFields() []string      { return append([]string(nil), fileFields...) }
func DirectoryFields() []string { return append([]string(nil), directoryFields...) }
func LinkFields() []string      { return append([]string(nil), linkFields...) }

// StorageFields are the fields of a hook that put files, directories,
// links, users and groups on the machine.
func StorageFields() []string { return append([]string(nil), storageFields...) }

// entries decodes a list of mappings at v, calling f for each item that is
// a mapping. what names an item in messages ("file"), example shows one.
func (d *decoder) entries(v value, what, example string, f func(i int, item value)) {
	n := v.node
	name := label(v.path)
	switch {
	case isNull(n):
		d.noValue(v, fmt.Sprintf("write a list of %s entries, such as %s: [%s], or remove the line", what, lastKey(v.path), example))
		return
	case n.Kind != yaml.SequenceNode:
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s must be a list, not %s", name, yamlnode.KindName(n)),
			fmt.Sprintf(`write each %s as "- path: /..." with its other fields under it`, what))
		return
	}
	for i, c := range n.Content {
		if !d.spend(c) {
			break
		}
		item := d.item(v.path, i, c)
		if item.node.Kind != yaml.MappingNode {
			d.add(Error, item.pos, item.path, fmt.Sprintf("a %s entry must be a mapping, not %s", what, yamlnode.KindName(item.node)),
				fmt.Sprintf("write it as %s", example))
			continue
		}
		f(i, item)
	}
}

// files decodes a hook's files.
func (d *decoder) files(v value) []File {
	var out []File
	d.entries(v, "file", "{path: /etc/myapp/config.toml, contents: ...}", func(i int, item value) {
		var f File
		var sources []string
		var hasPath bool
		d.mapping(item.node, item.path, func(e entry) {
			switch e.name {
			case "path":
				hasPath = true
				f.Path = d.absPath(e.value)
			case "contents":
				sources = append(sources, e.name)
				if s, ok := d.str(e.value, true); ok {
					f.Contents = &s
				}
			case "local":
				sources = append(sources, e.name)
				f.Local = d.localPath(e.value)
			case "source":
				sources = append(sources, e.name)
				f.Source = d.sourceURL(e.value)
			case "verification":
				f.Hash = d.verification(e.value)
			case "mode":
				f.Mode = d.mode(e.value, DefaultFileMode)
			case "user":
				f.User = d.owner(e.value)
			case "group":
				f.Group = d.owner(e.value)
			case "overwrite":
				f.Overwrite, _ = d.boolean(e.value)
			default:
				d.unknownStorageField(e, "file", fileFields)
			}
		})
		if !hasPath {
			d.add(Error, item.pos, item.path+".path", "the file has no path", "add path: with where the file goes, such as path: /etc/myapp/config.toml")
		}
		switch len(sources) {
		case 0:
			d.add(Error, item.pos, item.path, "the file has none of contents, local and source",
				"give its bytes with exactly one of contents: (inline), local: (a file next to the spec) or source: (a URL, with verification.hash)")
		case 1:
		default:
			p := item.path + "." + sources[1]
			d.add(Error, d.spec.Where(p), p, fmt.Sprintf("the file has both %s and %s", sources[0], sources[1]),
				"give its bytes with exactly one of contents, local and source: remove the others")
		}
		if f.Source != "" && f.Hash == "" && !d.errorPaths[item.path+".verification"] && !d.errorPaths[item.path+".verification.hash"] {
			p := item.path + ".source"
			d.add(Error, d.spec.Where(p), p, "a file from a source URL needs verification.hash",
				"add verification: {hash: sha512-HEX} (sha512sum FILE) or sha256-HEX, so that a changed download is refused")
		}
		out = append(out, f)
	})
	return out
}

// directories decodes a hook's directories.
func (d *decoder) directories(v value) []Directory {
	var out []Directory
	d.entries(v, "directory", "{path: /var/lib/myapp, mode: 0750}", func(i int, item value) {
		var dir Directory
		var hasPath bool
		d.mapping(item.node, item.path, func(e entry) {
			switch e.name {
			case "path":
				hasPath = true
				dir.Path = d.absPath(e.value)
			case "mode":
				dir.Mode = d.mode(e.value, DefaultDirectoryMode)
			case "user":
				dir.User = d.owner(e.value)
			case "group":
				dir.Group = d.owner(e.value)
			default:
				d.unknownStorageField(e, "directory", directoryFields)
			}
		})
		if !hasPath {
			d.add(Error, item.pos, item.path+".path", "the directory has no path", "add path:, such as path: /var/lib/myapp")
		}
		out = append(out, dir)
	})
	return out
}

// links decodes a hook's links.
func (d *decoder) links(v value) []Link {
	var out []Link
	d.entries(v, "link", "{path: /etc/myapp/current, target: /opt/myapp/v2}", func(i int, item value) {
		var l Link
		var hasPath, hasTarget bool
		var targetValue, ownerValue value
		d.mapping(item.node, item.path, func(e entry) {
			switch e.name {
			case "path":
				hasPath = true
				l.Path = d.absPath(e.value)
			case "target":
				hasTarget = true
				targetValue = e.value
				l.Target, _ = d.str(e.value, false)
			case "hard":
				l.Hard, _ = d.boolean(e.value)
			case "user":
				l.User = d.owner(e.value)
				ownerValue = e.value
			case "group":
				l.Group = d.owner(e.value)
				ownerValue = e.value
			case "overwrite":
				l.Overwrite, _ = d.boolean(e.value)
			default:
				d.unknownStorageField(e, "link", linkFields)
			}
		})
		if l.Hard && (l.User != "" || l.Group != "") {
			d.add(Error, ownerValue.pos, ownerValue.path, "a hard link has no owner of its own: it is another name of its target, whose owner it shares",
				"give the owner to the target's file entry, or drop hard: true for a symbolic link")
		}
		if !hasPath {
			d.add(Error, item.pos, item.path+".path", "the link has no path", "add path: with where the link is, such as path: /etc/myapp/current")
		}
		switch {
		case !hasTarget:
			d.add(Error, item.pos, item.path+".target", "the link has no target", "add target: with what the link points to")
		case d.errorPaths[targetValue.path]:
		case l.Target == "":
			d.add(Error, targetValue.pos, targetValue.path, "the link's target is empty", "write what the link points to")
		case l.Hard && !path.IsAbs(l.Target):
			d.add(Error, targetValue.pos, targetValue.path, fmt.Sprintf("a hard link's target must be an absolute path, not %q", l.Target),
				"write the target's absolute path, or drop hard: true for a symbolic link, whose target may be relative")
		case l.Hard && path.Clean(l.Target) != l.Target:
			d.add(Error, targetValue.pos, targetValue.path, fmt.Sprintf("target %q is not a normalised path", l.Target),
				fmt.Sprintf("write %s", path.Clean(l.Target)))
		}
		out = append(out, l)
	})
	return out
}

// absPath decodes the path of a file, directory or link: absolute,
// normalised, without "..".
func (d *decoder) absPath(v value) string {
	s, ok := d.str(v, false)
	if !ok {
		return ""
	}
	name := lastKey(v.path)
	switch {
	case s == "":
		d.add(Error, v.pos, v.path, name+" is empty", "write an absolute path, such as /etc/myapp/config.toml")
	case !strings.HasPrefix(s, "/"):
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s %q is not absolute", name, s),
			fmt.Sprintf("write the path from the root: /%s", s))
	case hasDotDot(s):
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s %q has a .. element", name, s),
			"write the path without ..: what it names must be plain to read, and to the machine")
	case s == "/":
		d.add(Error, v.pos, v.path, name+" is the root directory", "write the path of the file, directory or link itself")
	case path.Clean(s) != s:
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s %q is not normalised", name, s), "write "+path.Clean(s))
	default:
		return s
	}
	return ""
}

func hasDotDot(s string) bool {
	for _, e := range strings.Split(s, "/") {
		if e == ".." {
			return true
		}
	}
	return false
}

// localPath decodes local: a path relative to the spec's directory that
// stays inside it.
func (d *decoder) localPath(v value) string {
	s, ok := d.str(v, false)
	if !ok {
		return ""
	}
	switch {
	case s == "":
		d.add(Error, v.pos, v.path, "local is empty", "name a file next to the spec, such as local: myapp/config.toml")
	case strings.HasPrefix(s, "/"):
		d.add(Error, v.pos, v.path, fmt.Sprintf("local %q is an absolute path", s),
			"local names a file relative to the spec's directory, so that the spec and its files move together: copy the file next to the spec")
	case hasDotDot(s):
		d.add(Error, v.pos, v.path, fmt.Sprintf("local %q has a .. element: it must stay inside the spec's directory", s),
			"put the file in the spec's directory or below it, and name it from there")
	case path.Clean(s) != s:
		d.add(Error, v.pos, v.path, fmt.Sprintf("local %q is not normalised", s), "write "+path.Clean(s))
	default:
		return s
	}
	return ""
}

// sourceURL decodes source: an https:// or s3:// URL, as Ignition fetches.
func (d *decoder) sourceURL(v value) string {
	s, ok := d.str(v, false)
	if !ok {
		return ""
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		d.add(Error, v.pos, v.path, fmt.Sprintf("source %q is not a URL: %v", s, err), "write a URL such as https://example.com/myapp.tar.gz")
	case u.Scheme == "http":
		d.add(Error, v.pos, v.path, fmt.Sprintf("source %q is plain http", s),
			"use https://, so that the download cannot be read or changed on the way")
	case u.Scheme != "https" && u.Scheme != "s3":
		d.add(Error, v.pos, v.path, fmt.Sprintf("source %q is not an https:// or s3:// URL", s),
			"write an https:// URL, or s3://BUCKET/KEY; for bytes of your own use contents: or local:")
	case u.Host == "":
		d.add(Error, v.pos, v.path, fmt.Sprintf("source %q has no host", s), "write the URL with its host, such as https://example.com/file")
	case u.Scheme == "s3" && strings.Trim(u.Path, "/") == "":
		d.add(Error, v.pos, v.path, fmt.Sprintf("source %q names a bucket but no object", s), "write s3://BUCKET/KEY")
	default:
		return s
	}
	return ""
}

// verification decodes verification: {hash: ...}.
func (d *decoder) verification(v value) string {
	n := v.node
	switch {
	case isNull(n):
		d.noValue(v, "write verification: {hash: sha512-HEX}, or remove the line")
		return ""
	case n.Kind != yaml.MappingNode:
		d.add(Error, v.pos, v.path, fmt.Sprintf("verification must be a mapping, not %s", yamlnode.KindName(n)),
			"write verification: {hash: sha512-HEX}")
		return ""
	}
	var hash string
	var has bool
	d.mapping(n, v.path, func(e entry) {
		switch e.name {
		case "hash":
			has = true
			s, ok := d.str(e.value, false)
			if !ok {
				return
			}
			if !hashRE.MatchString(s) {
				hint := "write sha512- or sha256- and the digest in lower-case hex, as sha512sum or sha256sum print it"
				if alg, hex, ok := strings.Cut(s, "-"); ok && (alg == "sha256" || alg == "sha512") && strings.ToLower(hex) != hex {
					hint = "write the digest in lower-case hex: " + alg + "-" + strings.ToLower(hex)
				} else if len(s) == 64 || len(s) == 128 {
					hint = fmt.Sprintf("name the algorithm: sha%d-%s", map[int]int{64: 256, 128: 512}[len(s)], s)
				}
				d.add(Error, e.value.pos, e.value.path, fmt.Sprintf("%q is not a sha256- or sha512- hash", s), hint)
				return
			}
			hash = s
		default:
			d.unknownStorageField(e, "verification", verificationFields)
		}
	})
	if !has {
		d.add(Error, v.pos, v.path+".hash", "verification has no hash", "write verification: {hash: sha512-HEX}")
	}
	return hash
}

// mode decodes permission bits written in octal: 0644, "0644" or 0o644.
func (d *decoder) mode(v value, def uint32) *uint32 {
	n := v.node
	example := fmt.Sprintf("%04o", def)
	switch {
	case isNull(n):
		d.noValue(v, "write the mode in octal, such as mode: "+example+", or remove the line for "+example)
		return nil
	case n.Kind != yaml.ScalarNode:
		d.add(Error, v.pos, v.path, fmt.Sprintf("mode must be an octal number, not %s", yamlnode.KindName(n)), "write it such as mode: "+example)
		return nil
	case !knownScalarTag(n):
		d.str(v, false) // reports the tag
		return nil
	}
	s := n.Value
	switch {
	case octalRE.MatchString(s):
		m, err := strconv.ParseUint(strings.TrimPrefix(s, "0o"), 8, 32)
		if err == nil && m <= 0o7777 {
			mode := uint32(m)
			return &mode
		}
		d.add(Error, v.pos, v.path, fmt.Sprintf("mode %s is more than 07777", s),
			"write the permission bits in octal, such as "+example)
	case digitsRE.MatchString(s):
		// 420 is 0644 written in decimal, as JSON configs must; 644 is
		// 0644 without its leading 0. Both are refused rather than
		// guessed. 0844 has its leading 0 and 759 would not be octal
		// with one: an 8 or a 9 is said as what is wrong.
		if m, err := strconv.ParseUint(s, 10, 32); err == nil && commonModes[uint32(m)] && s[0] != '0' {
			d.add(Error, v.pos, v.path, fmt.Sprintf("mode %s is not octal: it has no leading 0", s),
				fmt.Sprintf("%s is %04o written in decimal: write mode: %04o", s, m, m))
		} else if i := strings.IndexAny(s, "89"); i >= 0 {
			d.add(Error, v.pos, v.path, fmt.Sprintf("mode %s is not octal: %c is not an octal digit", s, s[i]),
				"write the permission bits in octal, each digit 0 to 7, such as "+example)
		} else {
			d.add(Error, v.pos, v.path, fmt.Sprintf("mode %s is not octal: it has no leading 0", s),
				fmt.Sprintf("a mode is octal, with a leading 0: write mode: 0%s", s))
		}
	default:
		d.add(Error, v.pos, v.path, fmt.Sprintf("mode %q is not an octal number", s),
			"write the permission bits in octal, such as "+example+" (chmod's symbolic modes are not accepted)")
	}
	return nil
}

// commonModes are modes a decimal number in a mode is likely to mean.
var commonModes = map[uint32]bool{
	0o400: true, 0o440: true, 0o444: true, 0o555: true, 0o600: true, 0o640: true, 0o644: true, 0o660: true,
	0o664: true, 0o700: true, 0o750: true, 0o755: true, 0o770: true, 0o775: true, 0o777: true, 0o1777: true,
}

// owner decodes a user or group: a name, or a decimal id.
func (d *decoder) owner(v value) string {
	s, ok := d.str(v, false)
	if !ok {
		return ""
	}
	switch {
	case s == "":
		d.add(Error, v.pos, v.path, label(v.path)+" is empty", "write a name or a numeric id, or remove the line for root")
	case digitsRE.MatchString(s):
		if id, err := strconv.ParseUint(s, 10, 32); err != nil || id >= 1<<32-1 {
			d.add(Error, v.pos, v.path, fmt.Sprintf("%s id %s is out of range", label(v.path), s), "an id is at most 4294967294")
			return ""
		}
	case !ownerNameRE.MatchString(s):
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s %q is not a valid name", label(v.path), s),
			"a name starts with a letter or _ and has only letters, digits, _, . and -")
		return ""
	}
	return s
}

// OwnerProblem says why s is not a user or group of a file or directory
// (a name, or a decimal id below 4294967295), or returns "".
func OwnerProblem(s string) string {
	switch {
	case s == "":
		return "it is empty"
	case digitsRE.MatchString(s):
		if id, err := strconv.ParseUint(s, 10, 32); err != nil || id >= 1<<32-1 {
			return "the id is out of range"
		}
	case !ownerNameRE.MatchString(s):
		return "a name starts with a letter or _ and has only letters, digits, _, . and -"
	}
	return ""
}

func (d *decoder) unknownStorageField(e entry, where string, known []string) {
	hint := "the fields of a " + where + " entry are " + strings.Join(known, ", ")
	if s := suggest.Closest(e.name, known); s != "" {
		hint = "did you mean " + s + "?"
	}
	if where == "file" && (e.name == "hash" || e.name == "sha256" || e.name == "sha512") {
		hint = "write the hash under verification: {hash: sha512-HEX}"
	}
	if where == "user" && (e.name == "homedir" || e.name == "home_dir" || e.name == "homeDir") {
		hint = "Butane and cloud-init call it home_dir and homedir: write home:"
	}
	if where == "file" && e.name == "inline" {
		hint = "hostprov calls Butane's inline contents: write contents: |"
	}
	d.add(Error, d.pos(e.key), e.path, fmt.Sprintf("unknown field %q in a %s entry", e.name, where), hint)
}

// claim is a path that a file, directory or link of the spec puts on the
// machine.
type claim struct {
	kind string // "file", "directory", "link"
	at   string // the entry's path in the document: "hooks[0].files[1]"
}

// checkClaims reports a path claimed twice (by two hooks, or by a file and
// a directory or link) and anything below a file or a link: the machine
// can hold only one thing at a path, and what is below a link is wherever
// the link points.
func (d *decoder) checkClaims() {
	claims := map[string]claim{}
	var order []string
	for i := range d.spec.Hooks {
		h := &d.spec.Hooks[i]
		add := func(kind, field string, k int, p string) {
			if p == "" {
				return
			}
			at := fmt.Sprintf("hooks[%d].%s[%d]", i, field, k)
			if first, dup := claims[p]; dup {
				pp := at + ".path"
				fp := d.spec.Where(first.at)
				d.add(Error, d.spec.Where(pp), pp, fmt.Sprintf("%s is claimed already, by the %s at %s", p, first.kind, first.at),
					fmt.Sprintf("the first is on line %d: keep one of them, there can be only one thing at a path", fp.Line))
				return
			}
			claims[p] = claim{kind: kind, at: at}
			order = append(order, p)
		}
		for k, f := range h.Files {
			add("file", "files", k, f.Path)
		}
		for k, dir := range h.Directories {
			add("directory", "directories", k, dir.Path)
		}
		for k, l := range h.Links {
			add("link", "links", k, l.Path)
		}
	}
	sort.Strings(order)
	for _, p := range order {
		for a := path.Dir(p); a != "/"; a = path.Dir(a) {
			c, ok := claims[a]
			if !ok || c.kind == "directory" {
				continue
			}
			me := claims[p]
			pp := me.at + ".path"
			hint := fmt.Sprintf("what is below a link is wherever it points: write the %s at its real path, under the link's target", me.kind)
			if c.kind == "file" {
				hint = "a file cannot hold anything: make " + a + " a directory, or move this"
			}
			d.add(Error, d.spec.Where(pp), pp, fmt.Sprintf("%s is under %s, which is the %s at %s (line %d)", p, a, c.kind, c.at, d.spec.Where(c.at).Line), hint)
			break
		}
	}
}
