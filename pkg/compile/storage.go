package compile

import (
	"github.com/hostprov/hostprov/pkg/hooks"
)

// Storage is what the hooks of a spec put on the machine besides units:
// files, directories and links, users and groups, each in spec order (hook
// by hook, then entry by entry). Every output that can carry them does;
// apply writes them. No two entries have the same Path; no two users or
// groups the same Name.
type Storage struct {
	Files       []StorageFile
	Directories []Directory
	Links       []Link
	Users       []User
	Groups      []Group
}

// Empty reports whether s holds nothing.
func (s Storage) Empty() bool {
	return !s.HasPaths() && !s.HasAccounts()
}

// HasPaths reports whether s has files, directories or links.
func (s Storage) HasPaths() bool {
	return len(s.Files)+len(s.Directories)+len(s.Links) > 0
}

// HasAccounts reports whether s has users or groups.
func (s Storage) HasAccounts() bool { return len(s.Users)+len(s.Groups) > 0 }

// User is a rendered entry of a hook's users: the entry as the spec has
// it, and the hook and place it is written at. Entries of one name in
// several hooks are one User, with the id any of them gives.
type User struct {
	hooks.User
	Hook int
	Pos  hooks.Position
}

// Group is a rendered entry of a hook's groups, as User is of its users.
type Group struct {
	hooks.Group
	Hook int
	Pos  hooks.Position
}

// StorageFile is a rendered entry of a hook's files. Either Contents holds
// the file's bytes (written inline, or read from Local at render time), or
// Source is a URL whose bytes must have Hash.
type StorageFile struct {
	// Path is absolute and normalised.
	Path string
	// Mode is the permission bits (hooks.DefaultFileMode when the spec
	// gave none).
	Mode uint32
	// User and Group own the file; the zero Owner is root.
	User  Owner
	Group Owner
	// Contents is the file's bytes; nil when the file comes from Source.
	// An empty file has empty, non-nil Contents.
	Contents []byte
	// Local is the spec's local: as written, relative to the spec's
	// directory; empty unless the bytes came from a local file. Contents
	// holds what it read. Butane output keeps it as written.
	Local string
	// Source is the URL to fetch the file from; empty unless the file
	// comes from one.
	Source string
	// Hash is "sha256-HEX" or "sha512-HEX": always set for Source, and for
	// Contents the spec's verification.hash when it gave one (checked
	// against Contents at render time).
	Hash string
	// Overwrite replaces a file of another origin at Path.
	Overwrite bool
	// Hook is the index of the hook the entry is in (Unit.Hook of that
	// hook's unit), and Pos where the entry is written in the spec.
	Hook int
	Pos  hooks.Position
}

// Directory is a rendered entry of a hook's directories.
type Directory struct {
	Path string
	// Mode is the permission bits (hooks.DefaultDirectoryMode when the
	// spec gave none).
	Mode  uint32
	User  Owner
	Group Owner
	Hook  int
	Pos   hooks.Position
}

// Link is a rendered entry of a hook's links.
type Link struct {
	Path string
	// Target is what the link points to, as written.
	Target string
	Hard   bool
	// User and Group own a symbolic link (lchown); Overwrite replaces
	// what is at Path.
	User, Group Owner
	Overwrite   bool
	Hook        int
	Pos         hooks.Position
}

// Owner is a user or group as the spec names it: by Name, or by ID when
// the spec wrote a decimal number. The zero Owner is root (id 0), which
// is what the outputs mean when they name no owner.
type Owner struct {
	Name string
	ID   *int
}

// IsZero reports whether o names no owner, which means root.
func (o Owner) IsZero() bool { return o.Name == "" && o.ID == nil }

// Result is everything a spec renders to: its units and its storage.
type Result struct {
	// Spec is the parsed spec; nil when the document is no spec at all.
	Spec    *hooks.Spec
	Units   []Unit
	Storage Storage
}
