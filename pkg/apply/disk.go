package apply

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"

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
	// bad says why hostprov must not touch the path at all: it is a
	// directory or a device, or its drop-in directory is a symbolic link.
	bad string
}

// readDisk reads rel (NAME or NAME.d/FILE) in the unit directory dir.
func readDisk(dir, rel string) (diskFile, error) {
	if d := path.Dir(rel); d != "." {
		fi, err := os.Lstat(filepath.Join(dir, d))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return diskFile{}, nil
		case err != nil:
			return diskFile{}, fsError("reading", filepath.Join(dir, d), err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return diskFile{bad: fmt.Sprintf("its drop-in directory %s is a symbolic link; hostprov writes drop-ins only into a real directory, so that nothing is written elsewhere: replace the link by a directory", d)}, nil
		case !fi.IsDir():
			return diskFile{bad: fmt.Sprintf("%s is not a directory; move it away so that hostprov can make the drop-in directory", d)}, nil
		}
	}
	p := filepath.Join(dir, filepath.FromSlash(rel))
	data, err := readNoFollow(p)
	switch {
	case err == nil:
		return diskFile{exists: true, data: data, hash: hashOf(data)}, nil
	case errors.Is(err, fs.ErrNotExist):
		return diskFile{}, nil
	case !errors.Is(err, errNotRegular):
		return diskFile{}, fsError("reading", p, err)
	}
	// A link or something else than a file: say what it is.
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return diskFile{}, nil
	}
	if err != nil {
		return diskFile{}, fsError("reading", p, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(p)
		if err != nil {
			return diskFile{}, fsError("reading", p, err)
		}
		return diskFile{exists: true, isLink: true, link: target}, nil
	}
	return diskFile{exists: true, bad: fmt.Sprintf("%s is a %s, not a unit file; move it away", rel, kindOf(fi.Mode()))}, nil
}

// errNotRegular is readNoFollow's error for a path that is not a regular
// file: a symbolic link, a directory, a device, a pipe, a socket.
var errNotRegular = errors.New("not a regular file")

// readNoFollow reads the regular file at p. What is not a regular file is
// never opened: not a symbolic link (it would be followed), not a device
// (opening some has effects: a watchdog starts counting), not a pipe (an
// open may wait for a writer). Should the path change between the check
// and the open, O_NOFOLLOW and O_NONBLOCK keep the open from following a
// link or blocking, and fstat from reading anything but a regular file.
//
// It uses the system calls directly: a planned re-apply reads every unit
// file hostprov owns, and os.ReadFile's file object costs more system calls
// than the read itself (poller registration, mode changes).
func readNoFollow(p string) ([]byte, error) {
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: p, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, errNotRegular
	}
	fd, err := openNoFollow(p)
	switch {
	case errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.ENXIO):
		// Replaced by a symbolic link, or a socket, since.
		return nil, errNotRegular
	case err != nil:
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	defer syscall.Close(fd)
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: p, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, errNotRegular
	}
	// One byte more than the size: a read of a regular file returns less
	// than asked for only at its end, so one read sees the whole file and
	// its end, unless it grew meanwhile.
	buf := make([]byte, 0, st.Size+1)
	for {
		want := cap(buf) - len(buf)
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: p, Err: err}
		}
		buf = buf[:len(buf)+n]
		if n < want {
			return buf, nil
		}
		buf = append(buf, 0)[:len(buf)] // grown while read
	}
}

func openNoFollow(p string) (int, error) {
	for {
		fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
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

// fileOps are the changes Execute makes to files; tests replace them to
// simulate a crash at every step.
type fileOps interface {
	// WriteFile writes one file (the state) atomically.
	WriteFile(path string, data []byte, perm os.FileMode) error
	// WriteFiles writes many atomically, as fsutil.WriteFiles does, and
	// returns how many, from the first, are in place.
	WriteFiles(files []fsutil.File) (int, error)
	Remove(path string) error
}

type osFiles struct{}

func (osFiles) WriteFile(path string, data []byte, perm os.FileMode) error {
	return fsutil.WriteFile(path, data, perm)
}

func (osFiles) WriteFiles(files []fsutil.File) (int, error) {
	return fsutil.WriteFiles(files)
}

func (osFiles) Remove(path string) error {
	err := os.Remove(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return fsutil.SyncDir(filepath.Dir(path))
}

// ensureDropinDir makes the drop-in directory dir (mode 0755) when it is
// missing, and refuses one that is a symbolic link.
func ensureDropinDir(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fsError("creating the drop-in directory", dir, err)
		} else if err == nil {
			// Mkdir's mode passes through the umask, which at boot or
			// under a hardened profile may be 077; unit directories are
			// 0755 whatever it is.
			if err := os.Chmod(dir, 0o755); err != nil {
				return fsError("creating the drop-in directory", dir, err)
			}
		}
		fi, err = os.Lstat(dir)
	}
	if err != nil {
		return fsError("reading the drop-in directory", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("drop-in directory %s is a symbolic link or not a directory; hostprov refuses to write through it: replace it by a directory", dir)
	}
	return nil
}
