package importer

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"unicode/utf8"

	types "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/vincent-petithory/dataurl"

	"github.com/hostprov/hostprov/pkg/hooks"
)

func owner(o types.NodeUser) string {
	switch {
	case o.ID != nil:
		return strconv.Itoa(*o.ID)
	case o.Name != nil:
		return *o.Name
	}
	return ""
}

func groupOwner(o types.NodeGroup) string { return owner(types.NodeUser(o)) }

// uint32Ptr is an Ignition mode, uid or gid as hostprov's; nil for nil.
func uint32Ptr(m *int) *uint32 {
	if m == nil {
		return nil
	}
	v := uint32(*m)
	return &v
}

// storage puts the config's files, directories and links on the storage
// hook.
func (im *ignImporter) storage(c types.Config) {
	h := &im.storageHook
	for i, f := range c.Storage.Files {
		p := []any{"storage", "files", i}
		if len(f.Append) > 0 {
			// A hostprov file is the whole file: what the config appends
			// cannot be said, and a file written without it would be
			// another file.
			im.drop(p, []any{"append"}, f.Path+": append adds to a file, and a hostprov file is the whole file",
				"write the whole file as the hook's file, or append in a command hook")
			continue
		}
		hf := hooks.File{Path: f.Path, Mode: uint32Ptr(f.Mode), User: owner(f.User), Group: groupOwner(f.Group)}
		if f.Overwrite != nil && *f.Overwrite {
			hf.Overwrite = true
		}
		if !im.ownersOK(p, f.Path, hf.User, hf.Group) || !im.contents(&hf, f.Contents, p) {
			continue
		}
		h.Files = append(h.Files, hf)
		im.storageOrigins.files = append(im.storageOrigins.files, im.origin(p))
	}
	for i, d := range c.Storage.Directories {
		p := []any{"storage", "directories", i}
		if d.Overwrite != nil && *d.Overwrite {
			// A merge takes an entry of a path whole: the directory goes
			// with its overwrite.
			im.drop(p, []any{"overwrite"}, d.Path+": overwrite of a directory (replace what is at the path) has no hostprov equivalent",
				"remove what is at the path with a command hook, if it must go")
			continue
		}
		hd := hooks.Directory{Path: d.Path, Mode: uint32Ptr(d.Mode), User: owner(d.User), Group: groupOwner(d.Group)}
		if !im.ownersOK(p, d.Path, hd.User, hd.Group) {
			continue
		}
		h.Directories = append(h.Directories, hd)
		im.storageOrigins.directories = append(im.storageOrigins.directories, im.origin(p))
	}
	for i, l := range c.Storage.Links {
		p := []any{"storage", "links", i}
		if l.Target == nil {
			im.move(p, "the link "+l.Path+" has no target", "give the link its target")
			continue
		}
		hl := hooks.Link{Path: l.Path, Target: *l.Target, Hard: l.Hard != nil && *l.Hard, User: owner(l.User), Group: groupOwner(l.Group),
			Overwrite: l.Overwrite != nil && *l.Overwrite}
		if !im.ownersOK(p, l.Path, hl.User, hl.Group) {
			continue
		}
		h.Links = append(h.Links, hl)
		im.storageOrigins.links = append(im.storageOrigins.links, im.origin(p))
	}
}

// ownersOK reports whether the user and group of the entry at p (of the
// file or directory at path) are owners a spec can name, and warns that
// the entry is kept out when not.
func (im *ignImporter) ownersOK(p []any, path, user, group string) bool {
	for _, o := range []struct{ field, v string }{{"user", user}, {"group", group}} {
		if o.v == "" {
			continue
		}
		if problem := hooks.OwnerProblem(o.v); problem != "" {
			im.drop(p, []any{o.field}, fmt.Sprintf("%s: the %s %q is not one a hook spec can name: %s", path, o.field, o.v, problem),
				"rename the account, or give its numeric id")
			return false
		}
	}
	return true
}

// contents sets a file's bytes from an Ignition resource: a data URL's
// decoded (and gunzipped) bytes as contents, a remote source with its
// hash as source. It reports false, with a warning, for what a hostprov
// file cannot be.
func (im *ignImporter) contents(f *hooks.File, r types.Resource, entry []any) bool {
	drop := func(field, msg, hint string) bool {
		im.drop(entry, []any{"contents", field}, f.Path+": "+msg, hint)
		return false
	}
	if len(r.HTTPHeaders) > 0 {
		return drop("httpHeaders", "a source fetched with HTTP headers", "hostprov fetches a source without headers: put the file where it can be fetched so, with its hash")
	}
	if r.Verification.Hash != nil {
		f.Hash = *r.Verification.Hash
	}
	if r.Source == nil {
		empty := ""
		f.Contents = &empty
		return true
	}
	src := *r.Source
	u, err := url.Parse(src)
	if err != nil {
		return drop("source", "the source is not a URL: "+err.Error(), "fix the URL")
	}
	if u.Scheme != "data" {
		if r.Compression != nil && *r.Compression != "" {
			return drop("compression", "a compressed download, which hostprov does not decompress", "put the file uncompressed where it can be fetched, with the hash of its bytes")
		}
		if f.Hash == "" {
			return drop("source", "a file from "+u.Scheme+":// without verification.hash, which a hostprov file from a source needs", "add verification: {hash: sha512-HEX} (sha512sum FILE) to the config, then import it again")
		}
		if u.Scheme != "https" && u.Scheme != "s3" {
			return drop("source", "a source of scheme "+u.Scheme+"://; hostprov fetches https:// and s3:// only", "put the file at an https:// URL, with its hash")
		}
		f.Source = src
		return true
	}
	du, err := dataurl.DecodeString(src)
	if err != nil {
		return drop("source", "the data URL does not decode: "+err.Error(), "fix the data URL")
	}
	data := du.Data
	if r.Compression != nil && *r.Compression == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err == nil {
			data, err = io.ReadAll(zr)
		}
		if err != nil {
			return drop("source", "the gzip-compressed data does not decompress: "+err.Error(), "fix the data URL")
		}
	}
	if !utf8.Valid(data) {
		if name := im.locals.add(f.Path, data); name != "" {
			f.Local = name
			return true
		}
		return drop("source", "the contents are not UTF-8 text, which a hook spec's contents: cannot carry, and the spec goes to no directory for a local: file to be beside it",
			"import with -o FILE: such contents go beside it as local: files")
	}
	s := string(data)
	f.Contents = &s
	return true
}
