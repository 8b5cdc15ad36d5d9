package importer

import (
	"path"
	"strings"
)

// localFiles are the files of an import that go beside the spec as
// local: files: contents a spec's contents: cannot hold, as they are not
// UTF-8 text. They are named SET.files/PATH, PATH being where the file
// goes on the machine, so that the imports of several configs into one
// directory keep theirs apart.
type localFiles struct {
	// on is Input.Locals: without it, such contents go to the leftovers.
	on    bool
	dir   string
	files map[string][]byte
}

func newLocalFiles(in Input) *localFiles {
	return &localFiles{on: in.Locals, dir: in.setName + ".files"}
}

// add keeps data as the local: file of the file at p on the machine, and
// returns its name; "" when the import keeps no local files.
func (l *localFiles) add(p string, data []byte) string {
	if !l.on {
		return ""
	}
	name := path.Join(l.dir, strings.TrimPrefix(path.Clean(p), "/"))
	if l.files == nil {
		l.files = map[string][]byte{}
	}
	l.files[name] = data
	return name
}
