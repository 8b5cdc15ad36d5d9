// Package fsutil writes files so that a crash at any instant leaves either
// the old or the new content, never a partial file, and works below a
// directory through its file descriptor (Dir), so that nothing it writes,
// reads or removes can be redirected outside by a symbolic link.
package fsutil

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/hostprov/hostprov/internal/killpoint"
)

// WriteFile writes data to path atomically: to a temporary file in the same
// directory (so the rename cannot cross file systems), synced to disk, given
// mode perm, renamed over path, and then the directory is synced so that the
// rename itself survives a crash. On error, path is untouched and the
// temporary file is removed. A symbolic link at path is replaced, not
// written through; links in the directories of path are followed, as the
// directory a user names (render --format dir --out) means them. What must
// not follow them (apply's unit and state directories) uses OpenDir; an
// output the user names itself (fmt -w, import -o) uses WriteOutput.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	fd, err := openat(unix.AT_FDCWD, filepath.Dir(path), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return dirError("open", filepath.Dir(path), err)
	}
	d := &Dir{fd: fd, path: filepath.Dir(path)}
	defer d.Close()
	_, err = WriteFiles([]File{{Dir: d, Name: filepath.Base(path), Data: data, Perm: perm}})
	return err
}

// File is one atomic write of WriteFiles: Data as Name in Dir, whatever
// the bytes are to the caller (a unit file, apply's state, a hook's file).
type File struct {
	Dir  *Dir
	Name string
	Data []byte
	Perm os.FileMode
	// Owner, when set, is given to the file before it is renamed into
	// place, so that it is never visible with another owner.
	Owner *Owner
}

// Owner is a numeric owner and group.
type Owner struct{ UID, GID int }

// Path is the file's path, for messages.
func (f File) Path() string { return f.Dir.Join(f.Name) }

const (
	// syncers is how many temporary files WriteFiles syncs at once.
	syncers = 32
	// openMax is how many temporary files WriteFiles holds open at once:
	// a spec of 20,000 units must not run into the limit of open files
	// (often 1,024), and syncs that wait together are committed together
	// by groups far smaller than this.
	openMax = 256
)

// TempPrefix and TempInfix make the name of a temporary file of WriteFiles:
// TempPrefix + name + TempInfix + random. It is hidden, so systemd ignores
// it; a crash can leave one, for a later sweep (TempOf).
const (
	TempPrefix = "."
	TempInfix  = ".tmp-"
)

// TempOf returns the name a temporary file of WriteFiles stands in for,
// or "" when entry is not one.
func TempOf(entry string) string {
	i := strings.LastIndex(entry, TempInfix)
	if !strings.HasPrefix(entry, TempPrefix) || i < len(TempPrefix)+1 {
		return ""
	}
	return entry[len(TempPrefix):i]
}

// WriteFiles writes each file atomically, as WriteFile does, with one sync
// of each file's data and of each directory for them all: Prepare, then
// Commit. A crash at any instant still leaves every file old or new: a
// rename happens only once every file's data is on disk.
//
// It returns how many files, from the first, are in place. On error the
// others are untouched and no temporary file is left; the error names the
// file.
func WriteFiles(files []File) (int, error) {
	b, err := Prepare(files)
	if err != nil {
		return 0, err
	}
	defer b.Abort()
	return b.Commit()
}

// Batch is files written to their temporary files, synced, and not yet
// renamed over their names.
type Batch struct {
	files   []File
	temps   []string
	inodes  []uint64
	renamed int
}

// Prepare writes each file to a temporary file in its directory, gives it
// its mode, and syncs them all together; Commit then renames them. Syncs
// run concurrently because a file system commits syncs that wait together
// in one go: on ext4, a thousand small unit files take a tenth of the time
// that syncing them one after another does. At most openMax files are open
// at once, whatever the number of files.
//
// Temporary files are created with O_EXCL relative to their directory's
// descriptor, and renamed relative to it: neither follows a link.
//
// On error no temporary file is left, and the error names the file.
func Prepare(files []File) (*Batch, error) {
	b := &Batch{files: files, temps: make([]string, 0, len(files)), inodes: make([]uint64, 0, len(files))}
	for start := 0; start < len(files); start += openMax {
		if err := b.prepare(files[start:min(start+openMax, len(files))]); err != nil {
			b.Abort()
			return nil, err
		}
	}
	return b, nil
}

// prepare writes and syncs one group of files, holding them open.
func (b *Batch) prepare(files []File) error {
	fds := make([]int, 0, len(files))
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for _, file := range files {
		tmp, fd, err := createTemp(file)
		if err != nil {
			return pathError("create", file.Path(), err)
		}
		b.temps, fds = append(b.temps, tmp), append(fds, fd)
		if err := writeAll(fd, file.Data); err != nil {
			return pathError("write", file.Path(), err)
		}
		// The file is created through the umask; set its mode before
		// the rename so that it is never visible with the wrong one.
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return pathError("stat", file.Path(), err)
		}
		// Only when the owner differs: a file created by its owner
		// needs no privilege to keep it.
		if o := file.Owner; o != nil && (int(st.Uid) != o.UID || int(st.Gid) != o.GID) {
			if err := unix.Fchown(fd, o.UID, o.GID); err != nil {
				return pathError("chown", file.Path(), err)
			}
		}
		// After the chown, which clears the set-id bits.
		if err := unix.Fchmod(fd, uint32(modeBits(file.Perm))); err != nil {
			return pathError("chmod", file.Path(), err)
		}
		b.inodes = append(b.inodes, st.Ino)
	}
	if i, err := syncAll(fds); err != nil {
		return pathError("sync", files[i].Path(), err)
	}
	return nil
}

// Len is how many files the batch has.
func (b *Batch) Len() int { return len(b.files) }

// Inode is the inode number file i will have once renamed: what tells the
// file that was written from another with the same bytes.
func (b *Batch) Inode(i int) uint64 { return b.inodes[i] }

// Commit renames every file of the batch over its name, in order, and then
// syncs each directory once. It returns how many files, from the first,
// are in place.
func (b *Batch) Commit() (int, error) { return b.CommitN(len(b.files)) }

// CommitN is Commit for the first n files only (a crash test stands for a
// process that died after n renames); the others stay prepared.
func (b *Batch) CommitN(n int) (int, error) {
	dirs := map[*Dir]bool{}
	var order []*Dir
	var err error
	for ; b.renamed < n; b.renamed++ {
		f := b.files[b.renamed]
		killpoint.At("rename")
		if err = unix.Renameat(f.Dir.fd, b.temps[b.renamed], f.Dir.fd, f.Name); err != nil {
			err = pathError("rename", f.Path(), err)
			break
		}
		if !dirs[f.Dir] {
			dirs[f.Dir] = true
			order = append(order, f.Dir)
		}
	}
	for _, d := range order {
		if serr := d.Sync(); serr != nil && err == nil {
			err = pathError("sync", d.path, serr)
		}
	}
	return b.renamed, err
}

// Abort removes the temporary files not renamed yet.
func (b *Batch) Abort() {
	for i := b.renamed; i < len(b.temps); i++ {
		unix.Unlinkat(b.files[i].Dir.fd, b.temps[i], 0)
	}
	b.temps = b.temps[:b.renamed]
}

// createTemp creates the temporary file of f, exclusively (O_EXCL never
// follows a link), and returns its name and descriptor.
func createTemp(f File) (string, int, error) {
	if err := checkName(f.Name); err != nil {
		return "", -1, err
	}
	var fd int
	tmp, err := withTempName(f.Name, func(tmp string) (err error) {
		fd, err = openat(f.Dir.fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		return err
	})
	return tmp, fd, err
}

func writeAll(fd int, data []byte) error {
	for len(data) > 0 {
		killpoint.At("write")
		n, err := unix.Write(fd, data)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// syncAll syncs the files, syncers at a time, and returns an error and the
// index of the file it is about.
func syncAll(fds []int) (int, error) {
	if len(fds) == 1 {
		killpoint.At("fsync")
		return 0, unix.Fsync(fds[0])
	}
	var (
		wg    sync.WaitGroup
		once  sync.Once
		index int
		first error
	)
	next := make(chan int)
	for range min(syncers, len(fds)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				killpoint.At("fsync")
				if err := unix.Fsync(fds[i]); err != nil {
					once.Do(func() { index, first = i, err })
				}
			}
		}()
	}
	for i := range fds {
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
