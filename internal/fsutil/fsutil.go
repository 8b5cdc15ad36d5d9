// Package fsutil writes files so that a crash at any instant leaves either
// the old or the new content, never a partial file.
package fsutil

import (
	"os"
	"path/filepath"
)

// WriteFile writes data to path atomically: to a temporary file in the same
// directory (so the rename cannot cross file systems), synced to disk, given
// mode perm, renamed over path, and then the directory is synced so that the
// rename itself survives a crash. On error, path is untouched and the
// temporary file is removed.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	// CreateTemp makes the file 0600; set the mode before the rename so
	// that the file is never visible with the wrong one.
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	done = true
	return SyncDir(dir)
}

// SyncDir flushes a directory's entries (new names, renames) to disk.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
