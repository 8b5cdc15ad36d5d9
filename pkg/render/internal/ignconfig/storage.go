package ignconfig

import (
	"fmt"
	"strings"

	butaneutil "github.com/coreos/butane/base/util"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// StorageJSON is storage: of an Ignition config, the same in every
// spec version from 3.0.0 to 3.5.0 for what hostprov writes (files with
// contents, mode, user, group and overwrite; directories; links with
// target and hard), written as the Ignition output writes the units: keys sorted, no
// empty objects or lists.
type StorageJSON struct {
	Directories []ignitionDirectoryJSON `json:"directories,omitempty"`
	Files       []ignitionFileJSON      `json:"files,omitempty"`
	Links       []ignitionLinkJSON      `json:"links,omitempty"`
}

type ignitionFileJSON struct {
	Contents  ignitionResourceJSON `json:"contents"`
	Group     *ignitionOwnerJSON   `json:"group,omitempty"`
	Mode      int                  `json:"mode"`
	Overwrite *bool                `json:"overwrite,omitempty"`
	Path      string               `json:"path"`
	User      *ignitionOwnerJSON   `json:"user,omitempty"`
}

type ignitionResourceJSON struct {
	Compression  *string                   `json:"compression,omitempty"`
	Source       string                    `json:"source"`
	Verification *ignitionVerificationJSON `json:"verification,omitempty"`
}

type ignitionVerificationJSON struct {
	Hash string `json:"hash"`
}

type ignitionOwnerJSON struct {
	ID   *int    `json:"id,omitempty"`
	Name *string `json:"name,omitempty"`
}

type ignitionDirectoryJSON struct {
	Group *ignitionOwnerJSON `json:"group,omitempty"`
	Mode  int                `json:"mode"`
	Path  string             `json:"path"`
	User  *ignitionOwnerJSON `json:"user,omitempty"`
}

type ignitionLinkJSON struct {
	Group     *ignitionOwnerJSON `json:"group,omitempty"`
	Hard      *bool              `json:"hard,omitempty"`
	Overwrite *bool              `json:"overwrite,omitempty"`
	Path      string             `json:"path"`
	Target    string             `json:"target"`
	User      *ignitionOwnerJSON `json:"user,omitempty"`
}

// ignitionOwner is a user or group of an Ignition node; nil for root,
// which is Ignition's default.
func ignitionOwner(o compile.Owner) *ignitionOwnerJSON {
	switch {
	case o.ID != nil:
		id := *o.ID
		return &ignitionOwnerJSON{ID: &id}
	case o.Name != "":
		name := o.Name
		return &ignitionOwnerJSON{Name: &name}
	}
	return nil
}

// Storage says what Ignition is to write besides the units; nil
// when there is nothing. A file's contents become a data URL made as Butane
// makes it (the shortest of URL-escaped, base64 and gzip-compressed base64,
// with compression: gzip for the last), so that the Butane output
// translates to the same config byte for byte. A file from a source is
// fetched by Ignition and checked against its hash. Ignition 3.0.0 knows
// only sha512 hashes; a sha256 one is refused there, at the file.
func Storage(st compile.Storage, version string) (*StorageJSON, error) {
	if !st.HasPaths() {
		return nil, nil
	}
	out := &StorageJSON{}
	var diags hooks.Diagnostics
	// Ignition before spec 3.6.0 sets no set-id or sticky bit: its parser
	// warns that they are "not supported or functional", and the file
	// would land without them. Refused at the entry rather than lost.
	special := func(kind, p string, mode uint32, pos hooks.Position) bool {
		if mode&0o7000 == 0 {
			return false
		}
		diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: pos,
			Message: fmt.Sprintf("%s %s: mode %#o has set-id or sticky bits, which Ignition %s (and every spec version before 3.6.0) does not set", kind, p, mode, version),
			Hint:    fmt.Sprintf("give mode %#o and set the bits in the unit (ExecStartPre=chmod), or render for cloud-init, or apply the spec on the node", mode&0o777)})
		return true
	}
	for _, d := range st.Directories {
		if special("directory", d.Path, d.Mode, d.Pos) {
			continue
		}
		out.Directories = append(out.Directories, ignitionDirectoryJSON{Group: ignitionOwner(d.Group), Mode: int(d.Mode), Path: d.Path, User: ignitionOwner(d.User)})
	}
	for _, f := range st.Files {
		if special("file", f.Path, f.Mode, f.Pos) {
			continue
		}
		jf := ignitionFileJSON{Group: ignitionOwner(f.Group), Mode: int(f.Mode), Path: f.Path, User: ignitionOwner(f.User)}
		if f.Overwrite {
			jf.Overwrite = boolPtr(true)
		}
		if f.Source != "" {
			jf.Contents.Source = f.Source
		} else {
			src, compression, err := butaneutil.MakeDataURL(f.Contents, nil, true)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", f.Pos, f.Path, err)
			}
			jf.Contents.Source, jf.Contents.Compression = src, compression
		}
		if f.Hash != "" {
			if version == "3.0.0" && strings.HasPrefix(f.Hash, "sha256-") {
				diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: f.Pos,
					Message: "file " + f.Path + ": Ignition 3.0.0 verifies only sha512 hashes, and this file has a sha256 one",
					Hint:    "give its sha512 hash (sha512sum FILE), or render for Ignition 3.1.0 or later"})
				continue
			}
			jf.Contents.Verification = &ignitionVerificationJSON{Hash: f.Hash}
		}
		out.Files = append(out.Files, jf)
	}
	for _, l := range st.Links {
		jl := ignitionLinkJSON{Path: l.Path, Target: l.Target, User: ignitionOwner(l.User), Group: ignitionOwner(l.Group)}
		if l.Hard {
			jl.Hard = boolPtr(true)
		}
		if l.Overwrite {
			jl.Overwrite = boolPtr(true)
		}
		out.Links = append(out.Links, jl)
	}
	if len(diags) > 0 {
		return nil, diags
	}
	return out, nil
}
