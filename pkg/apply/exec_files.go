package apply

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/hostprov/hostprov/internal/fsutil"
)

// prepareFiles writes the files the plan writes to their temporary files,
// together (fsutil.Prepare: one sync for all), making the drop-in
// directories they need, and records in intent the inode each will have.
func (e *executor) prepareFiles(intent *State) error {
	var batch []fsutil.File
	var rels []string
	for i := range e.p.Files {
		f := &e.p.Files[i]
		if f.Op != OpAdd && f.Op != OpChange || f.Kind != "" {
			continue
		}
		dir, name, err := e.dirOf(f.rel, true)
		if err != nil {
			return err
		}
		batch = append(batch, fsutil.File{Dir: dir, Name: name, Data: f.New, Perm: 0o644})
		rels = append(rels, f.rel)
	}
	if len(batch) == 0 {
		return nil
	}
	b, err := e.files.Prepare(batch)
	if err != nil {
		return writeError(err)
	}
	e.batch = b
	for i, rel := range rels {
		if _, sf := intent.file(rel); sf != nil {
			sf.NextInode = b.Inode(i)
		}
	}
	return nil
}

// dirOf returns the directory of rel (NAME or NAME.d/FILE) in the unit
// directory and its name there; a drop-in directory is made when create
// is set, and is nil when it is missing and create is not.
func (e *executor) dirOf(rel string, create bool) (*fsutil.Dir, string, error) {
	d, name, ok := strings.Cut(rel, "/")
	if !ok {
		return e.udir, rel, nil
	}
	if dir := e.dirs[d]; dir != nil {
		return dir, name, nil
	}
	var dir *fsutil.Dir
	var err error
	if create {
		dir, err = dropinDir(e.udir, d)
	} else if dir, err = e.udir.OpenDir(d); errors.Is(err, fs.ErrNotExist) {
		return nil, name, nil // nothing to remove
	} else if err != nil {
		err = fmt.Errorf("drop-in directory %s: %w; hostprov removes drop-ins only in a real directory: replace it by a directory", e.udir.Join(d), err)
	}
	if err != nil {
		return nil, "", err
	}
	e.dirs[d] = dir
	return dir, name, nil
}

// writeFiles renames the prepared files into place, removes the files the
// plan removes, and updates intent to what is on disk as it goes; events
// follow the plan's order.
func (e *executor) writeFiles(intent *State) error {
	written, werr := 0, error(nil)
	if e.batch != nil {
		written, werr = e.files.Commit(e.batch)
	}
	next := 0 // the file of batch that comes next in plan order
	for i := range e.p.Files {
		f := &e.p.Files[i]
		if f.Stamp || f.Kind != "" {
			continue // removeStamps, after systemd reloaded; writePaths
		}
		switch f.Op {
		case OpUnchanged:
			e.emit(Event{Action: EvUnchanged, Unit: f.Unit, Path: f.Path, Reason: f.Reason, SHA256: f.NewSHA256})
		case OpKeep:
			e.emit(Event{Action: EvKept, Unit: f.Unit, Path: f.Path, Reason: f.Reason, SHA256: f.OldSHA256})
		case OpAdd, OpChange:
			if next >= written {
				return writeError(werr)
			}
			if _, sf := intent.file(f.rel); sf != nil {
				sf.SHA256, sf.Inode, sf.Next, sf.NextInode = f.NewSHA256, e.batch.Inode(next), "", 0
			}
			e.inodes[f.rel] = e.batch.Inode(next)
			next++
			e.emit(Event{Action: EvWrote, Unit: f.Unit, Path: f.Path, Reason: f.Reason, SHA256: f.NewSHA256})
		case OpRemove:
			dir, name, err := e.dirOf(f.rel, false)
			if err != nil {
				return err
			}
			if dir != nil {
				if err := e.files.Remove(dir, name); err != nil {
					return fsError("removing", dir.Join(name), err)
				}
			}
			if su, _ := intent.file(f.rel); su != nil {
				su.dropFile(f.rel)
			}
			if d, _, ok := strings.Cut(f.rel, "/"); ok && dir != nil {
				// An empty drop-in directory goes with its last
				// drop-in; a non-empty one (other drop-ins) stays.
				e.files.RemoveEmptyDir(e.udir, d)
			}
			e.emit(Event{Action: EvRemoved, Unit: f.Unit, Path: f.Path, Reason: f.Reason, SHA256: f.OldSHA256})
		}
	}
	if werr != nil {
		// Every file is in place, but a directory could not be synced.
		return writeError(werr)
	}
	return nil
}

// writeError is fsError for an error of fsutil.WriteFiles, which names the
// file.
func writeError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fsError("writing", pe.Path, err)
	}
	return fmt.Errorf("writing unit files: %w", err)
}

func (u *StateUnit) dropFile(rel string) {
	for i, f := range u.Files {
		if f.Path == rel {
			u.Files = append(u.Files[:i], u.Files[i+1:]...)
			return
		}
	}
}

// fileOps are the changes Execute makes to files; tests replace them to
// simulate a crash at every step.
type fileOps interface {
	// WriteFiles writes files atomically, as fsutil.WriteFiles does, and
	// returns how many, from the first, are in place.
	WriteFiles(files []fsutil.File) (int, error)
	// Prepare and Commit are WriteFiles in two steps, as fsutil.Prepare
	// and Batch.Commit.
	Prepare(files []fsutil.File) (*fsutil.Batch, error)
	Commit(b *fsutil.Batch) (int, error)
	// Remove removes a file of dir (a missing one is no error), and
	// RemoveEmptyDir a directory of dir if it is empty.
	Remove(dir *fsutil.Dir, name string) error
	RemoveEmptyDir(dir *fsutil.Dir, name string) error
}

type osFiles struct{}

func (osFiles) WriteFiles(files []fsutil.File) (int, error) { return fsutil.WriteFiles(files) }

func (osFiles) Prepare(files []fsutil.File) (*fsutil.Batch, error) { return fsutil.Prepare(files) }

func (osFiles) Commit(b *fsutil.Batch) (int, error) { return b.Commit() }

func (osFiles) Remove(dir *fsutil.Dir, name string) error { return dir.Remove(name) }

func (osFiles) RemoveEmptyDir(dir *fsutil.Dir, name string) error {
	return dir.RemoveEmptyDir(name)
}

// dropinDir opens the drop-in directory name in the unit directory, making
// it (mode 0755) when it is missing, and refuses one that is a symbolic link
// or not a directory. Files are then written relative to what it opened, so
// that swapping the directory for a link meanwhile redirects nothing.
func dropinDir(dir *fsutil.Dir, name string) (*fsutil.Dir, error) {
	d, err := dir.MkdirAll(name, 0o755)
	if errors.Is(err, fsutil.ErrNotDir) {
		return nil, fmt.Errorf("drop-in directory %s is a symbolic link or not a directory; hostprov refuses to write through it: replace it by a directory", dir.Join(name))
	}
	if err != nil {
		return nil, fsError("creating the drop-in directory", dir.Join(name), err)
	}
	return d, nil
}
