package apply

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/hostprov/hostprov/internal/fsutil"
)

// diskFile is what is at a path in the unit directory. Symbolic links are
// never followed: a link planted where hostprov writes is described, not
// read through (reading /etc/shadow through it would print it in a diff).
type diskFile struct {
	exists bool
	link   string // the link's target when it is a symbolic link
	isLink bool
	data   []byte // a regular file's bytes
	hash   string // and their SHA-256
	ino    uint64 // and its inode number
	// bad says why hostprov must not touch the path at all: it is a
	// directory or a device, or its drop-in directory is a symbolic link.
	bad string
}

// readDisk reads rel (NAME or NAME.d/FILE) in the unit directory dir,
// through its descriptor. A nil dir is a unit directory that does not
// exist yet (hostprov apply --root makes it): nothing is there.
func readDisk(dir *fsutil.Dir, rel string) (diskFile, error) {
	if dir == nil {
		return diskFile{}, nil
	}
	name := rel
	if d, base, ok := strings.Cut(rel, "/"); ok {
		sub, err := dir.OpenDir(d)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return diskFile{}, nil
		case errors.Is(err, fsutil.ErrNotDir):
			mode, _, lerr := dir.Lstat(d)
			if lerr == nil && mode&fs.ModeSymlink != 0 {
				return diskFile{bad: fmt.Sprintf("its drop-in directory %s is a symbolic link; hostprov writes drop-ins only into a real directory, so that nothing is written elsewhere: replace the link by a directory", d)}, nil
			}
			return diskFile{bad: fmt.Sprintf("%s is not a directory; move it away so that hostprov can make the drop-in directory", d)}, nil
		case err != nil:
			return diskFile{}, fsError("reading", dir.Join(d), err)
		}
		defer sub.Close()
		dir, name = sub, base
	}
	data, ino, err := dir.ReadFileIno(name, maxUnitFile)
	switch {
	case err == nil:
		return diskFile{exists: true, data: data, hash: hashOf(data), ino: ino}, nil
	case errors.Is(err, fs.ErrNotExist):
		return diskFile{}, nil
	case errors.Is(err, fsutil.ErrTooLarge):
		return diskFile{exists: true, bad: fmt.Sprintf("%s is larger than any unit file systemd reads (%v); move it away", rel, err)}, nil
	case !errors.Is(err, fsutil.ErrNotRegular):
		return diskFile{}, fsError("reading", dir.Join(name), err)
	}
	// A link or something else than a file: say what it is.
	mode, _, err := dir.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return diskFile{}, nil
	}
	if err != nil {
		return diskFile{}, fsError("reading", dir.Join(name), err)
	}
	if mode&fs.ModeSymlink != 0 {
		target, err := dir.Readlink(name)
		if err != nil {
			return diskFile{}, fsError("reading", dir.Join(name), err)
		}
		return diskFile{exists: true, isLink: true, link: target}, nil
	}
	return diskFile{exists: true, bad: fmt.Sprintf("%s is a %s, not a unit file; move it away", rel, kindOf(mode))}, nil
}

// maxUnitFile is the largest unit file hostprov reads: far above what a
// unit needs, so that a file planted in the unit directory cannot make
// hostprov read without bound.
const maxUnitFile = 64 << 20

// openUnitDir opens the unit directory of opts for reading, or returns nil
// when it does not exist yet.
func openUnitDir(opts Options) (*fsutil.Dir, error) {
	d, err := fsutil.OpenDir(opts.UnitDirPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, dirOpenError(opts.UnitDirPath(), "unit directory", "--unit-dir", err)
	}
	return d, nil
}

// dirOpenError says why a directory hostprov works in cannot be opened; a
// symbolic link is refused, since every check hostprov makes below it
// would then be made somewhere else than the path says.
func dirOpenError(dir, role, flag string, err error) error {
	if errors.Is(err, fsutil.ErrNotDir) {
		if target, lerr := os.Readlink(dir); lerr == nil {
			return fmt.Errorf("%s %s is a symbolic link to %s; hostprov works only in a real directory, so that what it checks is where it writes: give %s %s, the link's target, if that is where units belong", role, dir, target, flag, target)
		}
		return fmt.Errorf("%s %s is not a directory: give the right directory with %s", role, dir, flag)
	}
	return fsError("opening the "+role, dir, err)
}

func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}
