package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxLinks is how many symbolic links WriteOutput follows from the name it
// is given, as the kernel's own limit (40) for a path's resolution.
const maxLinks = 40

// WriteOutput writes data to an output a user named on the command line
// (fmt -w FILE, import -o OUT, kops set-hooks --cluster FILE): where the
// name leads, as a shell's > would, but a regular file atomically.
//
//   - A symbolic link, or a chain of them, is followed to its end, and the
//     file there is replaced atomically in its own directory (temporary
//     file, sync, rename, sync of the directory): the links stay links.
//   - A character device or a FIFO (/dev/null, a terminal, a named pipe) is
//     opened and written directly: there is nothing to rename over, and
//     replacing it with a file would break it.
//   - A name for a file the process holds open (/dev/stdout, /dev/fd/N,
//     /proc/self/fd/N) is opened and written directly, truncated if it is a
//     regular file: such a link in /proc stands for the open file, not for
//     a place, and whoever opened it (a shell's >>) decides where writes go.
//   - A name that does not exist, or a link to one, is created at the end
//     of the links, with perm; an existing file keeps its mode, and, when
//     hostprov runs as root, its owner.
//
// A directory, a block device or a socket is refused, and so is a missing
// directory on the way. What hostprov manages on a node (unit files,
// state) must never follow links, and uses Dir instead.
func WriteOutput(path string, data []byte, perm os.FileMode) error {
	fi, err := os.Stat(path)
	switch {
	case err == nil && !fi.Mode().IsRegular():
		if fi.Mode()&(fs.ModeCharDevice|fs.ModeNamedPipe) != 0 {
			return writeDirect(path, data, 0)
		}
		return &fs.PathError{Op: "write", Path: path, Err: fmt.Errorf("it is %s: hostprov writes an output only to a file, a character device or a pipe", kindOf(fi.Mode()))}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	}
	target, open, err := followLinks(path)
	if err != nil {
		return err
	}
	if open {
		return writeDirect(path, data, unix.O_TRUNC)
	}
	var owner *Owner
	if st, err := os.Stat(target); err == nil {
		perm = st.Mode().Perm() | st.Mode()&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)
		if s, ok := st.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 {
			owner = &Owner{UID: int(s.Uid), GID: int(s.Gid)}
		}
	}
	dir := filepath.Dir(target)
	fd, err := openat(unix.AT_FDCWD, dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return dirError("open", dir, err)
	}
	d := &Dir{fd: fd, path: dir}
	defer d.Close()
	_, err = WriteFiles([]File{{Dir: d, Name: filepath.Base(target), Data: data, Perm: perm, Owner: owner}})
	return err
}

// followLinks follows the symbolic links from path and returns the path
// they end at (which may not exist), or open when one of them is a link of
// /proc that stands for an open file rather than a path.
func followLinks(path string) (target string, open bool, err error) {
	p := path
	for range maxLinks {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) || err == nil && fi.Mode()&fs.ModeSymlink == 0 {
			return p, false, nil
		}
		if err != nil {
			return "", false, err
		}
		// Resolve the link's directory first, so that a relative
		// target with ".." is read from where the link really is.
		dir, err := filepath.EvalSymlinks(filepath.Dir(p))
		if err != nil {
			return "", false, err
		}
		var sfs unix.Statfs_t
		if unix.Statfs(dir, &sfs) == nil && sfs.Type == unix.PROC_SUPER_MAGIC {
			return "", true, nil
		}
		t, err := os.Readlink(p)
		if err != nil {
			return "", false, err
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(dir, t)
		}
		p = t
	}
	return "", false, &fs.PathError{Op: "open", Path: path, Err: unix.ELOOP}
}

// writeDirect opens path, which exists, for writing (with flag, such as
// O_TRUNC) and writes data.
func writeDirect(path string, data []byte, flag int) error {
	f, err := os.OpenFile(path, os.O_WRONLY|flag, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// kindOf names what a file that is not a regular one is, for errors.
func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file"
}
