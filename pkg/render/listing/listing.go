// Package listing is the plain output: the units listed for a person to
// read (--format text), each unit file and drop-in under a line that names
// it. It is the output the goldens of every spec are first read in.
package listing

import (
	"bytes"
	"fmt"

	"github.com/hostprov/hostprov/pkg/compile"
)

// Render lists the units for a person to read: each unit file after a
// "# NAME" line, each drop-in after "# NAME.d/FILE". A masked unit or one
// that only has drop-ins shows a note instead of contents.
func Render(us []compile.Unit) []byte {
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
