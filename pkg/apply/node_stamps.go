package apply

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hostprov/hostprov/internal/fsutil"
	"github.com/hostprov/hostprov/pkg/compile"
)

// hostPath is where a path of the node is on this machine: under Root when
// it is set.
func (o Options) hostPath(nodePath string) string {
	return filepath.Join(o.Root, filepath.FromSlash(nodePath))
}

// openStampDir opens the stamp directory, from Root down one directory
// at a time without following a symbolic link, so that what is listed and
// removed in it is in the stamp directory whatever is swapped meanwhile.
// missing reports that it does not exist, so there are no stamps; bad says
// why hostprov must not touch it: it or a directory above it (below Root)
// is a symbolic link or not a directory.
func (o Options) openStampDir() (dir *fsutil.Dir, missing bool, bad string, err error) {
	top := o.Root
	if top == "" {
		top = "/"
	}
	dir, err = fsutil.OpenDir(top)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, true, "", nil // a --root not made yet
	case err != nil:
		return nil, false, "", fsError("opening", top, err)
	}
	for _, part := range strings.Split(strings.Trim(compile.StampDir, "/"), "/") {
		sub, err := dir.OpenDir(part)
		p := dir.Join(part)
		dir.Close()
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, true, "", nil
		case errors.Is(err, fsutil.ErrNotDir):
			return nil, false, fmt.Sprintf("%s is a symbolic link or not a directory; hostprov removes stamps only in a real directory, so that nothing is removed elsewhere: replace the link by a directory, or remove the stamps by hand", p), nil
		case err != nil:
			return nil, false, "", fsError("reading", p, err)
		}
		dir = sub
	}
	return dir, false, "", nil
}

// listStamps lists the stamp directory.
func (o Options) listStamps() (*stampDir, error) {
	sd := &stampDir{}
	dir, missing, bad, err := o.openStampDir()
	if err != nil || missing {
		return sd, err
	}
	sd.bad = bad
	if bad != "" {
		// Listed even when nothing in it may be removed, to warn of
		// the stamps that stay; listing reads, and changes nothing.
		entries, _ := os.ReadDir(o.hostPath(compile.StampDir))
		for _, e := range entries {
			if e.Type().IsRegular() {
				sd.names = append(sd.names, e.Name())
			}
		}
		return sd, nil
	}
	defer dir.Close()
	entries, err := dir.ReadDir()
	if err != nil {
		return nil, fsError("reading", dir.Path(), err)
	}
	for _, e := range entries {
		if e.Type.IsRegular() {
			sd.names = append(sd.names, e.Name)
		}
	}
	return sd, nil
}

// stampTime returns when a unit file's stamp was written (its
// modification time), or nil when it names none or the stamp is not
// there. It is what systemd checks, so it follows a link as systemd
// does.
func (o Options) stampTime(content []byte) (string, *time.Time) {
	s := stampOf(content)
	if s == "" {
		return "", nil
	}
	fi, err := os.Stat(o.hostPath(s))
	if err != nil {
		return s, nil
	}
	t := fi.ModTime()
	return s, &t
}
