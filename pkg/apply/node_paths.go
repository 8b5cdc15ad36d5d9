package apply

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/hostprov/hostprov/internal/fsutil"
)

// nodeFS reaches the node's file system (below Options.Root) one directory
// at a time through fsutil.Dir, so that no symbolic link on the way to a
// file a hook places is ever followed: a link /etc/myapp -> /root planted
// by someone would otherwise make hostprov write, chown or remove there.
type nodeFS struct {
	root string // this machine's path of the node's "/"
}

func newNodeFS(opts Options) nodeFS {
	root := opts.Root
	if root == "" {
		root = "/"
	}
	return nodeFS{root: root}
}

// where is what walk found on the way to a node path's parent.
type where struct {
	dir *fsutil.Dir // the parent, when it exists; the caller closes it
	// missing are the node paths of the parents that do not exist, from
	// the top one down.
	missing []string
	// bad says why nothing may be placed there: a parent is a symbolic
	// link or not a directory.
	bad string
}

// walk opens the parent directory of the node path p, never following a
// link. A missing parent is no error (where.missing), a link or a file on
// the way is where.bad.
func (n nodeFS) walk(p string) (where, error) {
	d, err := fsutil.OpenDir(n.root)
	if err != nil {
		return where{}, fsError("opening the node's root directory", n.root, err)
	}
	parts := strings.Split(strings.TrimPrefix(path.Dir(p), "/"), "/")
	if path.Dir(p) == "/" {
		parts = nil
	}
	cur := "/"
	for i, name := range parts {
		cur = path.Join(cur, name)
		sub, err := d.OpenDir(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			d.Close()
			var missing []string
			for j := i; j < len(parts); j++ {
				missing = append(missing, "/"+strings.Join(parts[:j+1], "/"))
			}
			return where{missing: missing}, nil
		case errors.Is(err, fsutil.ErrNotDir):
			what := "is not a directory"
			if target, lerr := d.Readlink(name); lerr == nil {
				what = "is a symbolic link to " + target
			}
			d.Close()
			return where{bad: fmt.Sprintf("%s, a directory on its way, %s; hostprov never writes through a link, so that nothing lands elsewhere than the path says: replace it by a directory, or place the file at the link's target", cur, what)}, nil
		case err != nil:
			d.Close()
			return where{}, fsError("opening", cur, err)
		}
		d.Close()
		d = sub
	}
	return where{dir: d}, nil
}

// onDisk is what is at a node path, not followed.
type onDisk struct {
	exists bool
	st     fsutil.Stat
	data   []byte // a regular file's bytes
	hash   string // their SHA-256
	link   string // a symbolic link's target
}

func (o onDisk) isDir() bool  { return o.exists && o.st.Mode.IsDir() }
func (o onDisk) isFile() bool { return o.exists && o.st.Mode.IsRegular() }
func (o onDisk) isLink() bool { return o.exists && o.st.Mode&fs.ModeSymlink != 0 }

// maxNodeFile is the largest file a hook may place, read to compare it
// and downloaded at most.
const maxNodeFile = 1 << 30

// look describes name in dir.
func look(dir *fsutil.Dir, name string) (onDisk, error) {
	st, err := dir.Stat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return onDisk{}, nil
	}
	if err != nil {
		return onDisk{}, fsError("reading", dir.Join(name), err)
	}
	o := onDisk{exists: true, st: st}
	switch {
	case st.Mode.IsRegular():
		data, ino, err := dir.ReadFileIno(name, maxNodeFile)
		if err != nil {
			return onDisk{}, fsError("reading", dir.Join(name), err)
		}
		o.data, o.hash, o.st.Ino = data, hashOf(data), ino
	case st.Mode&fs.ModeSymlink != 0:
		if o.link, err = dir.Readlink(name); err != nil {
			return onDisk{}, fsError("reading", dir.Join(name), err)
		}
	}
	return o, nil
}
