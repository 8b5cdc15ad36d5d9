package apply

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// ErrSkipped is returned by a Systemd that cannot do an action where it
// runs, such as the offline one (--root), which has no manager to reload
// or to start units. Execute logs the action as skipped and goes on.
var ErrSkipped = errors.New("offline (--root): no systemd to do it")

// fsError explains a file system error in terms of its cause and its fix:
// a read-only file system, missing permission, a missing directory.
func fsError(what, path string, err error) error {
	var cause error = err
	var pe *fs.PathError
	if errors.As(err, &pe) {
		cause = pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		cause = le.Err
	}
	switch {
	case errors.Is(cause, syscall.EROFS):
		return fmt.Errorf("%s %s: the file system is read-only; remount it read-write (mount -o remount,rw), or on an image-based system give --unit-dir and --state-dir on a writable file system, or use --root on a writable copy of the image", what, path)
	case errors.Is(cause, syscall.EACCES), errors.Is(cause, syscall.EPERM):
		if os.Geteuid() != 0 {
			return fmt.Errorf("%s %s: permission denied; run hostprov as root (sudo hostprov ...), or give --unit-dir and --state-dir that this user can write", what, path)
		}
		return fmt.Errorf("%s %s: permission denied although running as root (an immutable file, chattr +i, or a security module such as SELinux?): %v", what, path, err)
	case errors.Is(cause, syscall.ENOSPC):
		return fmt.Errorf("%s %s: no space left on the device; free some space and run apply again (files already written are recorded)", what, path)
	case errors.Is(cause, fs.ErrNotExist):
		return fmt.Errorf("%s %s: no such file or directory", what, path)
	}
	return fmt.Errorf("%s %s: %v", what, path, err)
}

// linkedStateDir is the error for a state directory that is a symbolic
// link (or, under it, not a directory): hostprov's record of what it owns
// is never read or written through a link another user could point
// elsewhere.
func linkedStateDir(dir string) error {
	return fmt.Errorf("state directory %s is a symbolic link or not a directory; hostprov keeps its state only in a real directory: give its target with --state-dir, or replace it by a directory", dir)
}

// How checkDir treats a missing directory.
const (
	mustExist  = iota // a missing directory is an error
	createLast        // create it when its parent exists
	createAll         // create it and its parents
)

// checkDir makes sure dir is a directory this process can write, creating
// it as missing says. role names it in errors ("unit directory") and flag
// is the flag that sets it.
func checkDir(dir, role, flag string, missing int, perm os.FileMode) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		switch missing {
		case mustExist:
			return fmt.Errorf("%s %s does not exist; is this the right machine, with systemd installed? give the right directory with %s", role, dir, flag)
		case createLast:
			err = os.Mkdir(dir, perm)
		default:
			err = os.MkdirAll(dir, perm)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s %s does not exist, nor does its parent; create it, or give another with %s", role, dir, flag)
		}
		if err != nil {
			return fsError("creating the "+role, dir, err)
		}
		return nil
	}
	if err != nil {
		return fsError("reading the "+role, dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s %s is not a directory; give a directory with %s", role, dir, flag)
	}
	if err := syscall.Access(dir, 2 /* W_OK */); err != nil {
		return fsError("writing to the "+role, dir, err)
	}
	return nil
}
