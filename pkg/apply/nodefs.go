package apply

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
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

// accounts are the node's users and groups, from its /etc/passwd and
// /etc/group (below Root): a name in a hook means what it means on the
// node, not on the machine hostprov runs on.
type accounts struct {
	users, groups map[string]int
	// homes are the users' home directories, and shadow their password
	// hashes, for the users of /etc/shadow when it could be read.
	homes, shadow map[string]string
	// members are the users of each group's member list.
	members map[string][]string
}

// readAccounts reads the node's /etc/passwd and /etc/group, missing ones
// being empty.
func readAccounts(n nodeFS) (*accounts, error) {
	a := &accounts{users: map[string]int{}, groups: map[string]int{}, members: map[string][]string{},
		homes: map[string]string{}, shadow: map[string]string{}}
	for _, f := range []struct {
		path string
		into map[string]int
	}{{"/etc/passwd", a.users}, {"/etc/group", a.groups}} {
		w, err := n.walk(f.path)
		if err != nil {
			return nil, err
		}
		if w.dir == nil {
			continue
		}
		data, err := w.dir.ReadFile(path.Base(f.path), 64<<20)
		w.dir.Close()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fsError("reading", f.path, err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			fields := strings.Split(sc.Text(), ":")
			if len(fields) < 3 || fields[0] == "" || strings.HasPrefix(fields[0], "#") {
				continue
			}
			if id, err := strconv.Atoi(fields[2]); err == nil {
				if _, dup := f.into[fields[0]]; !dup {
					f.into[fields[0]] = id
				}
			}
			if f.path == "/etc/group" && len(fields) >= 4 && fields[3] != "" {
				a.members[fields[0]] = append(a.members[fields[0]], strings.Split(fields[3], ",")...)
			}
			if f.path == "/etc/passwd" && len(fields) >= 6 {
				if _, dup := a.homes[fields[0]]; !dup {
					a.homes[fields[0]] = fields[5]
				}
			}
		}
	}
	return a, nil
}

// readShadow reads the users' password hashes from the node's /etc/shadow,
// when this process may (a plan need not run as root): a user missing from
// shadow is one whose hash is not known. Only a plan with a passwordHash
// reads it.
func (a *accounts) readShadow(n nodeFS) {
	w, err := n.walk("/etc/shadow")
	if err != nil || w.dir == nil {
		return
	}
	data, err := w.dir.ReadFile("shadow", 64<<20)
	w.dir.Close()
	if err != nil {
		return
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		fields := strings.Split(line, ":")
		if len(fields) >= 2 && fields[0] != "" {
			if _, dup := a.shadow[fields[0]]; !dup {
				a.shadow[fields[0]] = fields[1]
			}
		}
	}
}

// id resolves a user or group of a hook: "" is root (0), a number is
// itself, a name is looked up in the node's file.
func (a *accounts) id(name string, user bool) (int, error) {
	if name == "" {
		return 0, nil
	}
	if n, err := strconv.Atoi(name); err == nil && n >= 0 {
		return n, nil
	}
	m, file := a.groups, "/etc/group"
	if user {
		m, file = a.users, "/etc/passwd"
	}
	if id, ok := m[name]; ok {
		return id, nil
	}
	kind := "group"
	if user {
		kind = "user"
	}
	return 0, fmt.Errorf("%s %q is not in the node's %s; create it first (a users: entry of a hook applied earlier, or the image), or give its numeric id", kind, name, file)
}
