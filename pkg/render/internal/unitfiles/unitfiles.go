// Package unitfiles is what every output reads of the rendered units: their
// files, as a unit directory holds them, and which units are templates. It
// sits below the outputs and links no output format's library, so that an
// output that needs only this (a unit directory, kops hooks) does not link
// Butane's and Ignition's config packages.
package unitfiles

import (
	"strings"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/units"
)

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

// IsTemplate reports whether name is a template ("worker@.service"), which
// systemd cannot start or restart without an instance: cloud-init and kops
// both start the units they write, and cannot start a template.
func IsTemplate(name string) bool {
	return strings.HasSuffix(strings.TrimSuffix(name, "."+units.Type(name)), "@")
}
