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

// fileKind, directoryKind and linkKind are the tables of the fields of
// an entry of a hook's files, directories and links, in the order they are
// documented; verificationKind that of a file's verification.
var (
	fileKind         *kind[File]
	verificationKind *kind[File]
	directoryKind    *kind[Directory]
	linkKind         *kind[Link]
)

func init() {
	fileKind = newKind("file", fileFields)
	fileKind.unknown = unknownStorageField(fileKind)
	fileKind.check = (*decoder).checkFile
	verificationKind = newKind("verification", verificationFields)
	verificationKind.unknown = unknownStorageField(verificationKind)
	directoryKind = newKind("directory", directoryFields)
	directoryKind.unknown = unknownStorageField(directoryKind)
	directoryKind.check = (*decoder).checkDirectory
	linkKind = newKind("link", linkFields)
	linkKind.unknown = unknownStorageField(linkKind)
	linkKind.check = (*decoder).checkLink
}

var fileFields = []field[File]{
	{key: "path", typ: "string", decode: func(d *decoder, v value, f *File) { f.Path = d.absPath(v) },
		encode: func(f *File) *yaml.Node { return yamlnode.Str(f.Path) }},
	{key: "contents", typ: "string",
		decode: func(d *decoder, v value, f *File) {
			d.entry().addSource("contents")
			if s, ok := d.str(v, true); ok {
				f.Contents = &s
			}
		},
		encode: func(f *File) *yaml.Node {
			if f.Contents == nil {
				return nil
			}
			return text(*f.Contents)
		}},
	{key: "local", typ: "string",
		decode: func(d *decoder, v value, f *File) { d.entry().addSource("local"); f.Local = d.localPath(v) },
		encode: func(f *File) *yaml.Node {
			if f.Contents != nil {
				return nil
			}
			return strOrNil(f.Local)
		}},
	{key: "source", typ: "URL",
		decode: func(d *decoder, v value, f *File) { d.entry().addSource("source"); f.Source = d.sourceURL(v) },
		encode: func(f *File) *yaml.Node {
			if f.Contents != nil || f.Local != "" {
				return nil
			}
			return strOrNil(f.Source)
		}},
	{key: "verification", typ: "`{hash: …}`", decode: (*decoder).verification,
		encode: func(f *File) *yaml.Node {
			if f.Hash == "" {
				return nil
			}
			return encodeEntry(verificationKind, f)
		}},
	modeField("mode", func(f *File) **uint32 { return &f.Mode }, DefaultFileMode),
	ownerField("user", func(f *File) *string { return &f.User }),
	ownerField("group", func(f *File) *string { return &f.Group }),
	flag("overwrite", 0, func(f *File) *bool { return &f.Overwrite }),
}

var verificationFields = []field[File]{
	{key: "hash", decode: decodeHash, encode: func(f *File) *yaml.Node { return yamlnode.Str(f.Hash) }},
}

var directoryFields = []field[Directory]{
	{key: "path", decode: func(d *decoder, v value, dir *Directory) { dir.Path = d.absPath(v) },
		encode: func(dir *Directory) *yaml.Node { return yamlnode.Str(dir.Path) }},
	modeField("mode", func(dir *Directory) **uint32 { return &dir.Mode }, DefaultDirectoryMode),
	ownerField("user", func(dir *Directory) *string { return &dir.User }),
	ownerField("group", func(dir *Directory) *string { return &dir.Group }),
}

var linkFields = []field[Link]{
	{key: "path", decode: func(d *decoder, v value, l *Link) { l.Path = d.absPath(v) },
		encode: func(l *Link) *yaml.Node { return yamlnode.Str(l.Path) }},
	{key: "target", decode: func(d *decoder, v value, l *Link) { d.entry().target = v; l.Target, _ = d.str(v, false) },
		encode: func(l *Link) *yaml.Node { return yamlnode.Str(l.Target) }},
	flag("hard", 0, func(l *Link) *bool { return &l.Hard }),
	linkOwnerField("user", func(l *Link) *string { return &l.User }),
	linkOwnerField("group", func(l *Link) *string { return &l.Group }),
	flag("overwrite", 0, func(l *Link) *bool { return &l.Overwrite }),
}

// addSource records that a file's bytes are given by key.
func (s *entryState) addSource(key string) {
	if s.nsources < len(s.sources) {
		s.sources[s.nsources] = key
	}
	s.nsources++
}

// modeField is the permission bits of a file or directory, def when not
// given.
func modeField[T any](key string, at func(*T) **uint32, def uint32) field[T] {
	return field[T]{key: key, typ: "octal",
		decode: func(d *decoder, v value, t *T) { *at(t) = d.mode(v, def) },
		encode: func(t *T) *yaml.Node {
			if m := *at(t); m != nil {
				return yamlnode.Mode(*m)
			}
			return nil
		}}
}

// ownerField is the user or group that owns a file or directory.
func ownerField[T any](key string, at func(*T) *string) field[T] {
	return stringField(key, "string", 0, at, (*decoder).owner, ownerNode)
}

// linkOwnerField is ownerField for a link, whose check needs to know
// where its owner was written.
func linkOwnerField(key string, at func(*Link) *string) field[Link] {
	f := ownerField(key, at)
	decode := f.decode
	f.decode = func(d *decoder, v value, l *Link) { decode(d, v, l); d.entry().owner = v }
	return f
}

var (
	hashRE = regexp.MustCompile(`^(sha256-[0-9a-f]{64}|sha512-[0-9a-f]{128})$`)
	// ownerNameRE is what useradd and systemd-sysusers accept as a user
	// or group name, give or take the trailing $ of machine accounts.
	ownerNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*\$?$`)
	octalRE     = regexp.MustCompile(`^0o?[0-7]+$`)
	digitsRE    = regexp.MustCompile(`^[0-9]+$`)
)

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

// checkFile checks that a file has a path and its bytes from one place.
func (d *decoder) checkFile(item value, f *File, st *entryState) {
	if !fileKind.has(st.present, "path") {
		d.add(Error, item.pos, item.path+".path", "the file has no path", "add path: with where the file goes, such as path: /etc/myapp/config.toml")
	}
	switch st.nsources {
	case 0:
		d.add(Error, item.pos, item.path, "the file has none of contents, local and source",
			"give its bytes with exactly one of contents: (inline), local: (a file next to the spec) or source: (a URL, with verification.hash)")
	case 1:
	default:
		p := item.path + "." + st.sources[1]
		d.add(Error, d.spec.Where(p), p, fmt.Sprintf("the file has both %s and %s", st.sources[0], st.sources[1]),
			"give its bytes with exactly one of contents, local and source: remove the others")
	}
	if f.Source != "" && f.Hash == "" && !d.errorPaths[item.path+".verification"] && !d.errorPaths[item.path+".verification.hash"] {
		p := item.path + ".source"
		d.add(Error, d.spec.Where(p), p, "a file from a source URL needs verification.hash",
			"add verification: {hash: sha512-HEX} (sha512sum FILE) or sha256-HEX, so that a changed download is refused")
	}
}

// checkDirectory checks that a directory has a path.
func (d *decoder) checkDirectory(item value, _ *Directory, st *entryState) {
	if !directoryKind.has(st.present, "path") {
		d.add(Error, item.pos, item.path+".path", "the directory has no path", "add path:, such as path: /var/lib/myapp")
	}
}

// checkLink checks that a link has a path and a target, one that a hard
// link can have, and no owner of its own when it is hard.
func (d *decoder) checkLink(item value, l *Link, st *entryState) {
	if l.Hard && (l.User != "" || l.Group != "") {
		d.add(Error, st.owner.pos, st.owner.path, "a hard link has no owner of its own: it is another name of its target, whose owner it shares",
			"give the owner to the target's file entry, or drop hard: true for a symbolic link")
	}
	if !linkKind.has(st.present, "path") {
		d.add(Error, item.pos, item.path+".path", "the link has no path", "add path: with where the link is, such as path: /etc/myapp/current")
	}
	target := st.target
	switch {
	case !linkKind.has(st.present, "target"):
		d.add(Error, item.pos, item.path+".target", "the link has no target", "add target: with what the link points to")
	case d.errorPaths[target.path]:
	case l.Target == "":
		d.add(Error, target.pos, target.path, "the link's target is empty", "write what the link points to")
	case l.Hard && !path.IsAbs(l.Target):
		d.add(Error, target.pos, target.path, fmt.Sprintf("a hard link's target must be an absolute path, not %q", l.Target),
			"write the target's absolute path, or drop hard: true for a symbolic link, whose target may be relative")
	case l.Hard && path.Clean(l.Target) != l.Target:
		d.add(Error, target.pos, target.path, fmt.Sprintf("target %q is not a normalised path", l.Target),
			fmt.Sprintf("write %s", path.Clean(l.Target)))
	}
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

// verification decodes a file's verification: {hash: ...}.
func (d *decoder) verification(v value, f *File) {
	n := v.node
	switch {
	case isNull(n):
		d.noValue(v, "write verification: {hash: sha512-HEX}, or remove the line")
		return
	case n.Kind != yaml.MappingNode:
		d.add(Error, v.pos, v.path, fmt.Sprintf("verification must be a mapping, not %s", yamlnode.KindName(n)),
			"write verification: {hash: sha512-HEX}")
		return
	}
	if st := decodeEntry(d, verificationKind, v, f); !verificationKind.has(st.present, "hash") {
		d.add(Error, v.pos, v.path+".hash", "verification has no hash", "write verification: {hash: sha512-HEX}")
	}
}

// decodeHash decodes verification.hash into f.Hash, when it is one.
func decodeHash(d *decoder, v value, f *File) {
	s, ok := d.str(v, false)
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
		d.add(Error, v.pos, v.path, fmt.Sprintf("%q is not a sha256- or sha512- hash", s), hint)
		return
	}
	f.Hash = s
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

// unknownStorageField reports a key that is not a field of an entry of
// kind k, which is of a hook's storage or accounts.
func unknownStorageField[T any](k *kind[T]) func(d *decoder, e entry) {
	return func(d *decoder, e entry) { d.unknownEntryField(e, k.name, k.keys) }
}

func (d *decoder) unknownEntryField(e entry, where string, known []string) {
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
