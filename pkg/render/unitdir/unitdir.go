// Package unitdir is the directory output: the units written into a unit
// directory as systemd reads them (--format dir), each file atomically.
package unitdir

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hostprov/hostprov/internal/fsutil"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render/internal/unitfiles"
)

// Write writes the units into dir as unit files (dir/NAME), drop-ins
// (dir/NAME.d/FILE) and masks (dir/NAME linked to /dev/null). Each file is
// written atomically, so a reader sees either the old or the new file.
// Files that are already there with other names are left alone.
func Write(dir string, us []compile.Unit) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range unitfiles.Files(us) {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if d := filepath.Dir(p); d != filepath.Clean(dir) {
			// A drop-in directory: never write through a link planted
			// there, into wherever it points.
			if fi, err := os.Lstat(d); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				return fmt.Errorf("%s is a symbolic link: hostprov writes drop-ins only into a real directory; remove the link", d)
			}
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := fsutil.WriteFile(p, f.Contents, 0o644); err != nil {
			return err
		}
	}
	for _, u := range us {
		if !u.Mask {
			continue
		}
		p := filepath.Join(dir, u.Name)
		tmp := p + ".hostprov-tmp"
		os.Remove(tmp)
		if err := os.Symlink("/dev/null", tmp); err != nil {
			return err
		}
		if err := os.Rename(tmp, p); err != nil {
			os.Remove(tmp)
			return err
		}
	}
	return nil
}
