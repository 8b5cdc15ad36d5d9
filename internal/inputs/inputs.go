// Package inputs fingerprints what hostprov apply renders units from: the
// input files, the settings that shape rendering, and the build of hostprov
// itself. A re-apply whose fingerprint is the one the last apply recorded
// needs no rendering (apply.NewPlanFromState).
package inputs

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"io"
	"os"
	"sync"
)

// File is one input file: its name as given, and its bytes.
type File struct {
	Name string
	Data []byte
}

// Fingerprint returns a fingerprint of the files, the settings
// ("--role=Node", ...) and the running build, or "" when the build cannot be
// identified: the units a spec renders to depend on the code that renders
// it, so without the build nothing may be skipped.
func Fingerprint(settings []string, files ...File) string {
	build := BuildID()
	if build == "" {
		return ""
	}
	h := sha256.New()
	// Every part is length-prefixed, so that no two lists of parts hash
	// alike.
	part := func(b []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	part([]byte("hostprov inputs 1"))
	part([]byte(build))
	part([]byte{byte(len(settings))})
	for _, s := range settings {
		part([]byte(s))
	}
	for _, f := range files {
		part([]byte(f.Name))
		part(f.Data)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// BuildID returns the Go build ID of the running executable, or "" when it
// cannot be read. The Go toolchain derives it from every input of the build
// and the linked result, so it changes whenever the code does, also for a
// development build that carries no version or VCS stamp.
var BuildID = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	f, err := elf.Open(exe)
	if err != nil {
		return ""
	}
	defer f.Close()
	return goBuildID(f)
})

// goBuildID reads the note the Go linker writes into section
// .note.go.buildid: name "Go", type 4, the build ID as its description.
func goBuildID(f *elf.File) string {
	s := f.Section(".note.go.buildid")
	if s == nil {
		return ""
	}
	data, err := io.ReadAll(io.LimitReader(s.Open(), 4096))
	if err != nil || len(data) < 16 {
		return ""
	}
	bo := f.ByteOrder
	namesz, descsz, typ := bo.Uint32(data), bo.Uint32(data[4:]), bo.Uint32(data[8:])
	const goBuildIDTag = 4
	name := 12 + int(namesz+3)&^3
	if typ != goBuildIDTag || namesz != 4 || !bytes.Equal(data[12:16], []byte("Go\x00\x00")) ||
		uint64(name)+uint64(descsz) > uint64(len(data)) {
		return ""
	}
	return string(bytes.TrimRight(data[name:name+int(descsz)], "\x00"))
}
