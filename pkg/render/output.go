package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	ign "github.com/coreos/ignition/v2/config/v3_4/types"

	"github.com/hostprov/hostprov/internal/fsutil"
)

// IgnitionVersion is the Ignition spec version Ignition emits: the newest
// that both Fedora CoreOS and Flatcar accept.
const IgnitionVersion = "3.4.0"

// Text lists the units for a person to read: each unit file after a
// "# NAME" line, each drop-in after "# NAME.d/FILE". A masked unit or one
// that only has drop-ins shows a note instead of contents.
func Text(us []Unit) []byte {
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

func stateNote(u Unit) string {
	if u.Enabled != nil && !*u.Enabled {
		return " (disabled)"
	}
	return ""
}

func enableNote(u Unit) string {
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
func Files(us []Unit) []File {
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
func WriteDir(dir string, us []Unit) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range Files(us) {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
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

// Ignition returns an Ignition config (spec IgnitionVersion) that installs
// the units: contents, enabled, mask and drop-ins as Ignition means them.
// The JSON is compact unless pretty is set, and ends with a newline.
func Ignition(us []Unit, pretty bool) ([]byte, error) {
	cfg := ign.Config{Ignition: ign.Ignition{Version: IgnitionVersion}}
	for _, u := range us {
		iu := ign.Unit{Name: u.Name, Enabled: u.Enabled}
		if u.Contents != nil && !u.Mask {
			iu.Contents = strPtr(string(u.Contents))
		}
		if u.Mask {
			t := true
			iu.Mask = &t
			iu.Enabled = nil // Ignition refuses to enable a masked unit
		}
		for _, d := range u.Dropins {
			iu.Dropins = append(iu.Dropins, ign.Dropin{Name: d.Name, Contents: strPtr(string(d.Contents))})
		}
		cfg.Systemd.Units = append(cfg.Systemd.Units, iu)
	}
	return marshalPruned(cfg, pretty)
}

func strPtr(s string) *string { return &s }

// marshalPruned marshals v as JSON without the empty objects and lists that
// encoding/json keeps for struct fields ("storage": {}), as Butane's output
// has none: the same config, fewer bytes of user data.
func marshalPruned(v any, pretty bool) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil, err
	}
	tree = prune(tree)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if pretty {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(tree); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func prune(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			x = prune(x)
			if isEmpty(x) {
				delete(t, k)
			} else {
				t[k] = x
			}
		}
	case []any:
		for i := range t {
			t[i] = prune(t[i])
		}
	}
	return v
}

func isEmpty(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}
