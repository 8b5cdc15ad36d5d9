package apply

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// PathKind is what a Path places: a file, a directory or a link.
type PathKind string

// Path kinds.
const (
	KindFile      PathKind = "file"
	KindDirectory PathKind = "directory"
	KindLink      PathKind = "link"
)

// Path is a file, directory or link a hook places outside the unit
// directory (a hook's files:, directories: and links:), as the planner
// compares it with the node: one type for the three kinds, named by its
// hook and its spec set, with the mode and owners it checks on disk.
// PathsOf makes it from compile's storage (compile.StorageFile, Directory,
// Link); the executor writes a file's bytes as an fsutil.File.
type Path struct {
	// Hook is the name of the hook it belongs to: when a file of a hook
	// changes, the hook's units restart.
	Hook string
	Kind PathKind
	// Path is the absolute, clean path on the node.
	Path string
	// Contents are a file's bytes; nil with Source.
	Contents []byte
	// Source is the URL a file is downloaded from at apply time, and
	// Hash the hash it must have ("sha256-HEX" or "sha512-HEX").
	Source string
	Hash   string
	// Mode holds the permission bits (and set-id and sticky bits); zero
	// means 0644 for a file, 0755 for a directory.
	Mode fs.FileMode
	// User and Group own it: a name of the node's /etc/passwd or
	// /etc/group, a numeric id, or "" for root.
	User, Group string
	// Overwrite lets the file or link replace one hostprov did not
	// place (as --adopt does for all).
	Overwrite bool
	// Target is a link's target; Hard makes it a hard link to the file
	// at Target (an absolute node path).
	Target string
	Hard   bool
	// Where is the entry's place in the spec ("FILE:LINE:COL"), for
	// messages.
	Where string

	set string // the spec set, in a plan of sets
	// sysusers marks a set's sysusers.d file (see Account).
	sysusers bool
}

func (p *Path) mode() fs.FileMode {
	if p.Mode != 0 || p.Kind == KindLink {
		return p.Mode
	}
	if p.Kind == KindDirectory {
		return 0o755
	}
	return 0o644
}

// PathState is a file, directory or link hostprov placed outside the unit
// directory. As for unit files, the state is what makes it hostprov's: only
// what it created (its bytes and its inode, a link's target and inode, a
// directory's inode) is removed when the spec no longer has it.
type PathState struct {
	Path string   `json:"path"`
	Kind PathKind `json:"kind"`
	Hook string   `json:"hook,omitempty"`
	Set  string   `json:"set,omitempty"`
	// SHA256, Inode, Next and NextInode are a file's, as StateFile's;
	// Inode is also a link's or a directory's.
	SHA256    string `json:"sha256,omitempty"`
	Inode     uint64 `json:"inode,omitempty"`
	Next      string `json:"next,omitempty"`
	NextInode uint64 `json:"nextInode,omitempty"`
	// Target and Hard are a link's.
	Target string `json:"target,omitempty"`
	Hard   bool   `json:"hard,omitempty"`
	// Parent marks a directory hostprov made because a path below it
	// needed it, not one a hook names: it goes, when empty, once no path
	// below it is wanted.
	Parent bool `json:"parent,omitempty"`
	// Existed marks a path that was there before hostprov took it over
	// (overwrite: true, --adopt, a directory that existed), and
	// PriorSHA256 is the hash of the file it replaced. Pruning leaves
	// such a path in place and only forgets it: removing it would not
	// give back what the user had, and would take the path away.
	Existed     bool   `json:"existed,omitempty"`
	PriorSHA256 string `json:"priorSha256,omitempty"`
}

func (s *PathState) owns(hash string) bool {
	return hash != "" && (hash == s.SHA256 || hash == s.Next)
}

// Path returns the state of the node path p, or nil.
func (s *State) Path(p string) *PathState {
	for _, sp := range s.Paths {
		if sp.Path == p {
			return sp
		}
	}
	return nil
}

// checkNodePath refuses a path that is not absolute and clean, and one
// in the unit or state directory, which are hostprov's own.
func checkNodePath(p string, opts Options) error {
	if !path.IsAbs(p) || path.Clean(p) != p || p == "/" || strings.ContainsRune(p, 0) {
		return fmt.Errorf("%q is not an absolute, clean path below /", p)
	}
	for _, d := range []string{opts.unitDir(), opts.stateDir()} {
		if p == d || strings.HasPrefix(p, d+"/") || strings.HasPrefix(d, p+"/") {
			return fmt.Errorf("%s is in or above %s, which is hostprov's own: hooks place units as units, not as files", p, d)
		}
	}
	return nil
}

// at is the prefix of a message about the entry at where.
func at(where string) string {
	if where == "" {
		return ""
	}
	return where + ": "
}

func hookOr(p *Path) string {
	if p.Hook == "" {
		return "(no hook)"
	}
	return "hook " + p.Hook
}

func describe(o onDisk) string {
	switch {
	case o.isFile():
		return "file"
	case o.isLink():
		return "symbolic link to " + o.link
	}
	return kindOf(o.st.Mode)
}

func modeNum(m fs.FileMode) uint32 {
	n := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		n |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		n |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		n |= 0o1000
	}
	return n
}

// hashMatches reports whether data has the hash of a verification
// ("sha256-HEX" or "sha512-HEX").
func hashMatches(want string, data []byte) bool {
	algo, h, ok := strings.Cut(want, "-")
	if !ok {
		return false
	}
	var sum []byte
	switch algo {
	case "sha256":
		s := sha256.Sum256(data)
		sum = s[:]
	case "sha512":
		s := sha512.Sum512(data)
		sum = s[:]
	default:
		return false
	}
	got, err := hex.DecodeString(h)
	return err == nil && bytes.Equal(got, sum)
}

// sourceHint says why a source cannot be downloaded by apply.
func sourceHint(src string) string {
	scheme, _, _ := strings.Cut(src, "://")
	switch scheme {
	case "s3", "gs", "arn":
		return fmt.Sprintf("source %s: hostprov apply downloads only https:// and http:// URLs (it has no %s client); give a presigned https:// URL of the object, or render for Ignition, which fetches %s:// itself", src, scheme, scheme)
	}
	return fmt.Sprintf("source %s: hostprov apply downloads only https:// and http:// URLs", src)
}

// hookNamer returns the name of hook i of spec: the storage of a rendered
// spec knows its hooks by index only, and a hook that only places files
// has no unit to carry its name (compile.Unit.HookName).
func hookNamer(spec *hooks.Spec) func(int) string {
	return func(i int) string {
		if spec != nil && i >= 0 && i < len(spec.Hooks) {
			return spec.Hooks[i].Name
		}
		return ""
	}
}

// PathsOf turns the storage of a rendered spec into the paths apply
// places, each named by its hook in spec.
func PathsOf(st compile.Storage, spec *hooks.Spec) []Path {
	name := hookNamer(spec)
	var ps []Path
	for _, d := range st.Directories {
		ps = append(ps, Path{Hook: name(d.Hook), Kind: KindDirectory, Path: d.Path, Mode: modeOf(d.Mode),
			User: ownerOf(d.User), Group: ownerOf(d.Group), Where: d.Pos.String()})
	}
	for _, f := range st.Files {
		ps = append(ps, Path{Hook: name(f.Hook), Kind: KindFile, Path: f.Path, Contents: f.Contents, Source: f.Source,
			Hash: f.Hash, Mode: modeOf(f.Mode), User: ownerOf(f.User), Group: ownerOf(f.Group), Overwrite: f.Overwrite,
			Where: f.Pos.String()})
	}
	for _, l := range st.Links {
		ps = append(ps, Path{Hook: name(l.Hook), Kind: KindLink, Path: l.Path, Target: l.Target, Hard: l.Hard,
			User: ownerOf(l.User), Group: ownerOf(l.Group), Overwrite: l.Overwrite, Where: l.Pos.String()})
	}
	return ps
}

// modeOf is a spec's octal mode (set-id and sticky bits included) as a
// FileMode.
func modeOf(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	if m&0o4000 != 0 {
		mode |= fs.ModeSetuid
	}
	if m&0o2000 != 0 {
		mode |= fs.ModeSetgid
	}
	if m&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

func ownerOf(o compile.Owner) string {
	if o.ID != nil {
		return strconv.Itoa(*o.ID)
	}
	return o.Name
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
