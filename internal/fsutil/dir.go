package fsutil

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hostprov/hostprov/internal/killpoint"
)

// Dir is an open directory. Its operations work relative to its file
// descriptor, take plain names (no '/'), and never follow a symbolic link
// in the name they are given: what hostprov reads, writes and removes
// below a directory it opened stays below it, even if someone swaps a
// directory on the way for a link while hostprov works (a check of the
// path followed by a write through the path again would follow the link).
type Dir struct {
	fd   int
	path string // for messages
}

// ErrNotDir is the error of OpenDir and Dir.OpenDir for a name that is a
// symbolic link or not a directory.
var ErrNotDir = errors.New("a symbolic link or not a directory")

// OpenDir opens the directory at path. Links in path are followed, but for
// its last element: path names the directory the caller trusts (the unit
// directory), and only what is below it is guarded.
func OpenDir(path string) (*Dir, error) {
	fd, err := openat(unix.AT_FDCWD, path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, dirError("open", path, err)
	}
	return &Dir{fd: fd, path: path}, nil
}

// OpenFile opens the file name in d with flag (os.O_RDWR|os.O_CREATE, say)
// and, when it creates it, perm; never through a symbolic link.
func (d *Dir) OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	fd, err := openat(d.fd, name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: d.Join(name), Err: err}
	}
	return os.NewFile(uintptr(fd), d.Join(name)), nil
}

// Path is the directory's path, as it was opened.
func (d *Dir) Path() string { return d.path }

// Join is the path of name in d, for messages.
func (d *Dir) Join(name string) string { return filepath.Join(d.path, name) }

// Close closes the directory.
func (d *Dir) Close() error {
	if d == nil || d.fd < 0 {
		return nil
	}
	err := unix.Close(d.fd)
	d.fd = -1
	return err
}

// OpenDir opens the directory name in d, refusing a symbolic link
// (ErrNotDir).
func (d *Dir) OpenDir(name string) (*Dir, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	fd, err := openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, dirError("open", d.Join(name), err)
	}
	return &Dir{fd: fd, path: d.Join(name)}, nil
}

// MkdirAll opens the directory name in d, making it with mode perm
// (whatever the umask) when it is missing. A symbolic link is refused
// (ErrNotDir), also one that appears where the directory was just made.
func (d *Dir) MkdirAll(name string, perm os.FileMode) (*Dir, error) {
	sub, err := d.OpenDir(name)
	if !errors.Is(err, fs.ErrNotExist) {
		return sub, err
	}
	killpoint.At("mkdir")
	if err := unix.Mkdirat(d.fd, name, uint32(perm.Perm())); err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, &fs.PathError{Op: "mkdir", Path: d.Join(name), Err: err}
	}
	sub, err = d.OpenDir(name)
	if err != nil {
		return nil, err
	}
	// Mkdir's mode passes through the umask, which at boot or under a
	// hardened profile may be 077.
	if err := unix.Fchmod(sub.fd, uint32(perm.Perm())); err != nil {
		sub.Close()
		return nil, &fs.PathError{Op: "chmod", Path: sub.path, Err: err}
	}
	if err := d.Sync(); err != nil {
		sub.Close()
		return nil, &fs.PathError{Op: "sync", Path: d.path, Err: err}
	}
	return sub, nil
}

// Lstat describes name in d without following it.
func (d *Dir) Lstat(name string) (fs.FileMode, int64, error) {
	if err := checkName(name); err != nil {
		return 0, 0, err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, 0, &fs.PathError{Op: "lstat", Path: d.Join(name), Err: err}
	}
	return fileMode(st.Mode), st.Size, nil
}

// Readlink returns the target of the symbolic link name in d.
func (d *Dir) Readlink(name string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	for n := 256; ; n *= 2 {
		buf := make([]byte, n)
		m, err := unix.Readlinkat(d.fd, name, buf)
		if err != nil {
			return "", &fs.PathError{Op: "readlink", Path: d.Join(name), Err: err}
		}
		if m < n {
			return string(buf[:m]), nil
		}
	}
}

// ErrNotRegular is ReadFile's error for a name that is not a regular file:
// a symbolic link, a directory, a device, a pipe, a socket.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is ReadFile's error for a file larger than it may read.
var ErrTooLarge = errors.New("file too large")

// ReadFile reads the regular file name in d, of at most max bytes. What is
// not a regular file is never opened: not a symbolic link (it would be
// followed), not a device (opening some has effects: a watchdog starts
// counting, /dev/zero never ends), not a pipe (an open waits for a
// writer). Should the name change between the check and the open,
// O_NOFOLLOW and O_NONBLOCK keep the open from following a link or
// blocking, and fstat from reading anything but a regular file. A file
// that grows past max while read is refused too.
func (d *Dir) ReadFile(name string, max int64) ([]byte, error) {
	data, _, err := d.ReadFileIno(name, max)
	return data, err
}

// ReadFileIno is ReadFile, and returns the file's inode number too.
func (d *Dir) ReadFileIno(name string, max int64) ([]byte, uint64, error) {
	if err := checkName(name); err != nil {
		return nil, 0, err
	}
	p := d.Join(name)
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, 0, &fs.PathError{Op: "lstat", Path: p, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, 0, &fs.PathError{Op: "read", Path: p, Err: ErrNotRegular}
	}
	fd, err := openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	switch {
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENXIO):
		// Replaced by a symbolic link, or a socket, since.
		return nil, 0, &fs.PathError{Op: "read", Path: p, Err: ErrNotRegular}
	case err != nil:
		return nil, 0, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, 0, &fs.PathError{Op: "stat", Path: p, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, 0, &fs.PathError{Op: "read", Path: p, Err: ErrNotRegular}
	}
	if st.Size > max {
		return nil, 0, &fs.PathError{Op: "read", Path: p, Err: fmt.Errorf("%w: %d bytes, more than %d", ErrTooLarge, st.Size, max)}
	}
	// One byte more than the size: a read of a regular file returns less
	// than asked for only at its end, so one read sees the whole file and
	// its end, unless it grew meanwhile.
	buf := make([]byte, 0, st.Size+1)
	for {
		want := cap(buf) - len(buf)
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, 0, &fs.PathError{Op: "read", Path: p, Err: err}
		}
		buf = buf[:len(buf)+n]
		if n < want {
			return buf, st.Ino, nil
		}
		if int64(len(buf)) > max {
			return nil, 0, &fs.PathError{Op: "read", Path: p, Err: fmt.Errorf("%w: it grew past %d bytes while read", ErrTooLarge, max)}
		}
		buf = append(buf, 0)[:len(buf)] // grown while read
	}
}

// Entry is a name in a directory and its type (the type bits of
// fs.FileMode), as ReadDir lists it.
type Entry struct {
	Name string
	Type fs.FileMode
}

// ReadDir lists d, sorted by name.
func (d *Dir) ReadDir() ([]Entry, error) {
	// A file of its own for the listing: reading moves the descriptor's
	// offset, and os.File closes what it holds.
	fd, err := openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: d.path, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, len(ents))
	for i, e := range ents {
		out[i] = Entry{Name: e.Name(), Type: e.Type()}
	}
	sortEntries(out)
	return out, nil
}

// Remove removes the file (or symbolic link) name in d and syncs d. A
// missing name is not an error.
func (d *Dir) Remove(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	killpoint.At("unlink")
	err := unix.Unlinkat(d.fd, name, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return &fs.PathError{Op: "remove", Path: d.Join(name), Err: err}
	}
	return d.Sync()
}

// RemoveEmptyDir removes the directory name in d if it is empty; one that
// is not, or is missing, stays without an error.
func (d *Dir) RemoveEmptyDir(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	killpoint.At("unlink")
	err := unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR)
	switch {
	case err == nil:
		return d.Sync()
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTEMPTY), errors.Is(err, unix.EEXIST):
		return nil
	}
	return &fs.PathError{Op: "remove", Path: d.Join(name), Err: err}
}

// Sync flushes the directory's entries (new names, renames) to disk.
func (d *Dir) Sync() error {
	killpoint.At("fsync")
	return unix.Fsync(d.fd)
}

// checkName refuses a name that is not one plain name in its directory.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name || containsNUL(name) {
		return &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("%q is not a plain file name", name)}
	}
	return nil
}

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

func openat(dirfd int, name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, mode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// dirError is the error of opening a directory: ErrNotDir (with the cause)
// for a symbolic link or something else than a directory.
func dirError(op, path string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return &fs.PathError{Op: op, Path: path, Err: ErrNotDir}
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}

func fileMode(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	case unix.S_IFREG:
		return 0
	}
	return fs.ModeIrregular
}

func sortEntries(es []Entry) {
	slices.SortFunc(es, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
}

// Stat is what Dir.Stat says of a name: its type and permission bits (as
// fs.FileMode, set-id and sticky bits included), owner, inode and size.
type Stat struct {
	Mode     fs.FileMode
	UID, GID int
	Ino      uint64
	Size     int64
}

// Stat describes name in d without following it.
func (d *Dir) Stat(name string) (Stat, error) {
	if err := checkName(name); err != nil {
		return Stat{}, err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Stat{}, &fs.PathError{Op: "lstat", Path: d.Join(name), Err: err}
	}
	return statOf(&st), nil
}

// StatSelf describes d itself.
func (d *Dir) StatSelf() (Stat, error) {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return Stat{}, &fs.PathError{Op: "stat", Path: d.path, Err: err}
	}
	return statOf(&st), nil
}

func statOf(st *unix.Stat_t) Stat {
	m := fileMode(st.Mode) | fs.FileMode(st.Mode&0o777)
	if st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return Stat{Mode: m, UID: int(st.Uid), GID: int(st.Gid), Ino: st.Ino, Size: st.Size}
}

// modeBits is perm with its set-id and sticky bits as chmod takes them.
func modeBits(perm os.FileMode) uint32 {
	m := uint32(perm.Perm())
	if perm&fs.ModeSetuid != 0 {
		m |= unix.S_ISUID
	}
	if perm&fs.ModeSetgid != 0 {
		m |= unix.S_ISGID
	}
	if perm&fs.ModeSticky != 0 {
		m |= unix.S_ISVTX
	}
	return m
}

// SetOwnerMode gives d itself the owner (when set) and then the mode perm.
func (d *Dir) SetOwnerMode(owner *Owner, perm os.FileMode) error {
	if owner != nil {
		var st unix.Stat_t
		if err := unix.Fstat(d.fd, &st); err != nil {
			return &fs.PathError{Op: "stat", Path: d.path, Err: err}
		}
		if int(st.Uid) != owner.UID || int(st.Gid) != owner.GID {
			if err := unix.Fchown(d.fd, owner.UID, owner.GID); err != nil {
				return &fs.PathError{Op: "chown", Path: d.path, Err: err}
			}
		}
	}
	if err := unix.Fchmod(d.fd, modeBits(perm)); err != nil {
		return &fs.PathError{Op: "chmod", Path: d.path, Err: err}
	}
	return nil
}

// Symlink makes name in d a symbolic link to target, atomically: the link
// is made under a temporary name, given owner (when set, without following
// it), and renamed over name, which may be a file or a link but not a
// directory. d is synced. It returns the new link's inode.
func (d *Dir) Symlink(target, name string, owner *Owner) (uint64, error) {
	if err := checkName(name); err != nil {
		return 0, err
	}
	return d.placeTemp(name, owner, "symlink", func(tmp string) error { return unix.Symlinkat(target, d.fd, tmp) })
}

// Link makes name in d a hard link to the file from in dir src (never
// following a link at from), atomically as Symlink does. It returns the
// inode, which is from's.
func (d *Dir) Link(src *Dir, from, name string) (uint64, error) {
	if err := checkName(name); err != nil {
		return 0, err
	}
	if err := checkName(from); err != nil {
		return 0, err
	}
	return d.placeTemp(name, nil, "link", func(tmp string) error { return unix.Linkat(src.fd, from, d.fd, tmp, 0) })
}

// placeTemp makes an entry with create under a temporary name for name
// and commits it over name; op names create in its error.
func (d *Dir) placeTemp(name string, owner *Owner, op string, create func(tmp string) error) (uint64, error) {
	tmp, err := withTempName(name, create)
	if err != nil {
		return 0, &fs.PathError{Op: op, Path: d.Join(name), Err: err}
	}
	return d.commitTemp(tmp, name, owner)
}

// withTempName calls create with a random temporary name for name, and
// again with another while create finds the name taken (EEXIST): create
// must make the entry exclusively, so that it never writes through what
// another put there. It returns the name and create's error.
func withTempName(name string, create func(tmp string) error) (string, error) {
	var b [8]byte
	for {
		rand.Read(b[:])
		tmp := TempPrefix + name + TempInfix + hex.EncodeToString(b[:])
		killpoint.At("create")
		if err := create(tmp); !errors.Is(err, unix.EEXIST) {
			return tmp, err
		}
	}
}

// commitTemp chowns the temporary entry tmp (not following it), renames
// it over name and syncs d; on error tmp is removed.
func (d *Dir) commitTemp(tmp, name string, owner *Owner) (uint64, error) {
	fail := func(op string, err error) (uint64, error) {
		unix.Unlinkat(d.fd, tmp, 0)
		return 0, &fs.PathError{Op: op, Path: d.Join(name), Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, tmp, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fail("lstat", err)
	}
	if owner != nil && (int(st.Uid) != owner.UID || int(st.Gid) != owner.GID) {
		if err := unix.Fchownat(d.fd, tmp, owner.UID, owner.GID, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fail("chown", err)
		}
	}
	killpoint.At("rename")
	if err := unix.Renameat(d.fd, tmp, d.fd, name); err != nil {
		return fail("rename", err)
	}
	// A rename between two links to one file does nothing and succeeds:
	// the temporary name would stay.
	unix.Unlinkat(d.fd, tmp, 0)
	return st.Ino, d.Sync()
}
