package render

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hostprov/hostprov/internal/fsutil"
	"github.com/hostprov/hostprov/pkg/compile"
)

// Text lists the units for a person to read: each unit file after a
// "# NAME" line, each drop-in after "# NAME.d/FILE". A masked unit or one
// that only has drop-ins shows a note instead of contents.
func Text(us []compile.Unit) []byte {
	var b bytes.Buffer
	for i, u := range us {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch {
		case u.Mask:
			fmt.Fprintf(&b, "# %s (masked: linked to /dev/null)\n", u.Name)
		case u.Contents != nil:
			fmt.Fprintf(&b, "# %s%s\n", u.Name, stateNote(u))
			b.Write(u.Contents)
		default:
			fmt.Fprintf(&b, "# %s (existing unit%s)\n", u.Name, enableNote(u))
		}
		for _, d := range u.Dropins {
			fmt.Fprintf(&b, "\n# %s.d/%s\n", u.Name, d.Name)
			b.Write(d.Contents)
		}
	}
	return b.Bytes()
}

func stateNote(u compile.Unit) string {
	if u.Enabled != nil && !*u.Enabled {
		return " (disabled)"
	}
	return ""
}

func enableNote(u compile.Unit) string {
	switch {
	case u.Enabled == nil:
		return ""
	case *u.Enabled:
		return ", enabled"
	}
	return ", disabled"
}

// Files returns every file of the units relative to a unit directory, in a
// stable order: NAME for unit files and NAME.d/FILE for drop-ins. Masks
// are links, not files, and are not included.
func Files(us []compile.Unit) []File {
	var fs []File
	for _, u := range us {
		if u.Contents != nil && !u.Mask {
			fs = append(fs, File{Path: u.Name, Contents: u.Contents})
		}
		for _, d := range u.Dropins {
			fs = append(fs, File{Path: u.Name + ".d/" + d.Name, Contents: d.Contents})
		}
	}
	return fs
}

// File is one file of a rendered unit directory.
type File struct {
	Path     string // relative, slash-separated
	Contents []byte
}

// WriteDir writes the units into dir as unit files (dir/NAME), drop-ins
// (dir/NAME.d/FILE) and masks (dir/NAME linked to /dev/null). Each file is
// written atomically, so a reader sees either the old or the new file.
// Files that are already there with other names are left alone.
func WriteDir(dir string, us []compile.Unit) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range Files(us) {
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
