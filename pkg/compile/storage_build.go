package compile

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hostprov/hostprov/pkg/hooks"
)

// maxLocalSize is the largest file that local: reads, in bytes. Every
// output carries the bytes inline, and user data is limited (16 KiB on
// EC2, a few megabytes elsewhere); a larger file belongs behind source:.
const maxLocalSize = 4 << 20

// storage builds the Storage of the spec, reading local files relative
// to the directory of file.
func (b *builder) storage(file string) Storage {
	var st Storage
	for i := range b.spec.Hooks {
		h := &b.spec.Hooks[i]
		for k, f := range h.Files {
			p := fmt.Sprintf("hooks[%d].files[%d]", i, k)
			if b.refusedBelow(p) {
				continue
			}
			sf := StorageFile{Path: f.Path, Mode: hooks.DefaultFileMode, User: owner(f.User), Group: owner(f.Group),
				Source: f.Source, Hash: f.Hash, Overwrite: f.Overwrite, Hook: i, Pos: b.spec.Where(p)}
			if f.Mode != nil {
				sf.Mode = *f.Mode
			}
			switch {
			case f.Contents != nil:
				sf.Contents = []byte(*f.Contents)
			case f.Local != "":
				data, ok := b.readLocal(p+".local", file, f.Local)
				if !ok {
					continue
				}
				sf.Contents, sf.Local = data, f.Local
			}
			if sf.Contents != nil && f.Hash != "" {
				if got := digest(f.Hash, sf.Contents); got != f.Hash {
					b.errorf(p+".verification.hash", fmt.Sprintf("if the contents are right, write hash: %s", got),
						"the file's contents do not have this hash")
					continue
				}
			}
			st.Files = append(st.Files, sf)
		}
		for k, d := range h.Directories {
			p := fmt.Sprintf("hooks[%d].directories[%d]", i, k)
			if b.refusedBelow(p) {
				continue
			}
			sd := Directory{Path: d.Path, Mode: hooks.DefaultDirectoryMode, User: owner(d.User), Group: owner(d.Group), Hook: i, Pos: b.spec.Where(p)}
			if d.Mode != nil {
				sd.Mode = *d.Mode
			}
			st.Directories = append(st.Directories, sd)
		}
		for k, l := range h.Links {
			p := fmt.Sprintf("hooks[%d].links[%d]", i, k)
			if b.refusedBelow(p) {
				continue
			}
			st.Links = append(st.Links, Link{Path: l.Path, Target: l.Target, Hard: l.Hard, User: owner(l.User), Group: owner(l.Group),
				Overwrite: l.Overwrite, Hook: i, Pos: b.spec.Where(p)})
		}
	}
	b.accounts(&st)
	return st
}

// accounts adds the users and groups of the spec to st. Entries of one
// name are one account: the parser has refused two ids for it, and the
// other fields must agree too where both entries give them.
func (b *builder) accounts(st *Storage) {
	users, groups := indexAccounts(&st.Users), indexAccounts(&st.Groups)
	for i := range b.spec.Hooks {
		h := &b.spec.Hooks[i]
		for k, u := range h.Users {
			p := fmt.Sprintf("hooks[%d].users[%d]", i, k)
			if u.Name == "" || b.refusedBelow(p) {
				continue
			}
			ru := User{User: u, Hook: i, Pos: b.spec.Where(p)}
			first := users.same(ru)
			if first == nil {
				continue
			}
			if first.UID == nil {
				first.UID = ru.UID
			}
			// Two ids for one name are the parser's to refuse.
			if f := accountDiff("", nil, nil, userValues(*first), userValues(ru), userFields); f != nil {
				b.errorf(p, fmt.Sprintf("the first is on line %d: give both entries the same %s, or write the user once", first.Pos.Line, f[0]),
					"user %s is written already, with another %s", u.Name, f[0])
			}
		}
		for k, g := range h.Groups {
			p := fmt.Sprintf("hooks[%d].groups[%d]", i, k)
			if g.Name == "" || b.refusedBelow(p) {
				continue
			}
			rg := Group{Group: g, Hook: i, Pos: b.spec.Where(p)}
			first := groups.same(rg)
			if first == nil {
				continue
			}
			if first.GID == nil {
				first.GID = rg.GID
			}
			if f := accountDiff("", nil, nil, groupValues(*first), groupValues(rg), groupFields); f != nil {
				b.errorf(p, fmt.Sprintf("the first is on line %d: give both entries the same %s, or write the group once", first.Pos.Line, f[0]),
					"group %s is written already, with another %s", g.Name, f[0])
			}
		}
	}
}

// unitDir is where the user data outputs put unit files and drop-ins:
// Ignition, Butane and cloud-init alike write them to the administrator's
// unit directory.
const unitDir = "/etc/systemd/system"

// checkUnitPaths refuses a file, directory or link at a path where a unit
// file or drop-in of the spec goes, or its drop-in directory: two writers
// of one path, of which the outputs would keep one or fail.
func (b *builder) checkUnitPaths(us []Unit, st Storage) {
	if len(st.Files) == 0 && len(st.Directories) == 0 && len(st.Links) == 0 {
		return // nothing to collide with a unit
	}
	owned := map[string]string{} // path -> the unit that writes it
	for _, u := range us {
		if u.Contents != nil || u.Mask {
			owned[unitDir+"/"+u.Name] = u.Name
		}
		if len(u.Dropins) > 0 {
			owned[unitDir+"/"+u.Name+".d"] = u.Name
		}
		for _, d := range u.Dropins {
			owned[unitDir+"/"+u.Name+".d/"+d.Name] = u.Name
		}
	}
	check := func(p string, pos hooks.Position, hook int, kind string) {
		if unit, ok := owned[p]; ok {
			b.diags = append(b.diags, hooks.Diagnostic{Severity: hooks.Error, Pos: pos, Path: fmt.Sprintf("hooks[%d]", hook),
				Message: fmt.Sprintf("%s %s is where the unit %s is written", kind, p, unit),
				Hint:    "write units as hooks (a drop-in as dropins:), not as files"})
		}
	}
	for _, f := range st.Files {
		check(f.Path, f.Pos, f.Hook, "file")
	}
	for _, d := range st.Directories {
		check(d.Path, d.Pos, d.Hook, "directory")
	}
	for _, l := range st.Links {
		check(l.Path, l.Pos, l.Hook, "link")
	}
}

// refusedBelow reports whether the parser refused the value at p or any
// value inside it.
func (b *builder) refusedBelow(p string) bool {
	for q := range b.refused {
		if q == p || strings.HasPrefix(q, p+".") || strings.HasPrefix(q, p+"[") {
			return true
		}
	}
	return false
}

// readLocal reads local, relative to the directory of the spec file,
// refusing a file outside that directory (through a symbolic link too)
// and anything but a regular file.
func (b *builder) readLocal(p, file, local string) ([]byte, bool) {
	if data, ok := b.locals[local]; ok {
		if len(data) > maxLocalSize {
			b.errorf(p, "put a file this large behind source: (an https:// URL with verification.hash)",
				"local %s is %d bytes; user data carries at most %d", local, len(data), maxLocalSize)
			return nil, false
		}
		return data, true
	}
	if file == hooks.StdinName || file == "-" || file == "" {
		b.errorf(p, "write the spec to a file next to the file it names, and render that", "a spec read from standard input has no directory for local %s to be relative to", local)
		return nil, false
	}
	dir := filepath.Dir(file)
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		b.errorf(p, "", "cannot read local %s: %v", local, err)
		return nil, false
	}
	name := filepath.Join(dir, filepath.FromSlash(local))
	real, err := filepath.EvalSymlinks(name)
	if err != nil {
		hint := "local is relative to the directory of the spec, " + dir
		if !errors.Is(err, os.ErrNotExist) {
			hint = ""
		}
		b.errorf(p, hint, "cannot read local %s: %v", local, unwrapPath(err))
		return nil, false
	}
	if rel, err := filepath.Rel(root, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		b.errorf(p, "copy the file into the spec's directory: a spec and its files move together",
			"local %s is a link to %s, outside the spec's directory %s", local, real, dir)
		return nil, false
	}
	fh, err := os.Open(real)
	if err != nil {
		b.errorf(p, "", "cannot read local %s: %v", local, unwrapPath(err))
		return nil, false
	}
	defer fh.Close()
	fi, err := fh.Stat()
	switch {
	case err != nil:
		b.errorf(p, "", "cannot read local %s: %v", local, unwrapPath(err))
		return nil, false
	case !fi.Mode().IsRegular():
		b.errorf(p, "name a regular file; a directory's files each need an entry of their own", "local %s is not a regular file", local)
		return nil, false
	case fi.Size() > maxLocalSize:
		b.errorf(p, "put a file this large behind source: (an https:// URL with verification.hash)",
			"local %s is %d bytes; user data carries at most %d", local, fi.Size(), maxLocalSize)
		return nil, false
	}
	data, err := io.ReadAll(io.LimitReader(fh, maxLocalSize+1))
	if err != nil {
		b.errorf(p, "", "cannot read local %s: %v", local, unwrapPath(err))
		return nil, false
	}
	if data == nil {
		data = []byte{}
	}
	return data, true
}

// unwrapPath drops the path from an *os.PathError, whose message repeats
// what the diagnostic says already.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// digest is the hash of data with the algorithm of want ("sha256-..." or
// "sha512-..."), in the same form.
func digest(want string, data []byte) string {
	if strings.HasPrefix(want, "sha256-") {
		s := sha256.Sum256(data)
		return "sha256-" + hex.EncodeToString(s[:])
	}
	s := sha512.Sum512(data)
	return "sha512-" + hex.EncodeToString(s[:])
}

// owner is a user or group as the parser decoded it: a decimal id or a
// name; "" is root.
func owner(s string) Owner {
	if s == "" {
		return Owner{}
	}
	if id, err := strconv.Atoi(s); err == nil && id >= 0 {
		return Owner{ID: &id}
	}
	return Owner{Name: s}
}

// String shows o as the spec wrote it; root for the zero Owner.
func (o Owner) String() string {
	switch {
	case o.ID != nil:
		return strconv.Itoa(*o.ID)
	case o.Name != "":
		return o.Name
	}
	return "root"
}
