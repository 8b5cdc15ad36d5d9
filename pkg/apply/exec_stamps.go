package apply

import (
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/hostprov/hostprov/pkg/compile"
)

// removeStamp removes one stamp the plan removes, through the stamp
// directory opened again without following a link on the way.
func (e *executor) removeStamp(f *FileChange) error {
	full := e.p.opts.hostPath(f.Path)
	if path.Dir(f.Path) != compile.StampDir {
		return fmt.Errorf("removing stamp %s: not in %s", f.Path, compile.StampDir)
	}
	dir, missing, bad, err := e.p.opts.openStampDir()
	switch {
	case err != nil:
		return err
	case missing:
		return nil
	case bad != "":
		return fmt.Errorf("removing stamp %s: %s", full, bad)
	}
	defer dir.Close()
	name := path.Base(f.Path)
	mode, _, err := dir.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fsError("reading", full, err)
	}
	if !mode.IsRegular() {
		return fmt.Errorf("removing stamp %s: it is no longer a regular file; left alone: remove it by hand", full)
	}
	if err := e.files.Remove(dir, name); err != nil {
		return fsError("removing", full, err)
	}
	return nil
}

// removeStamps removes the stamps the plan removes. It runs once the unit
// files are written or removed and systemd has reloaded them, so that no
// unit on disk or loaded names a stamp as it goes: removed before, a crash
// could leave the unit of a removed hook, or the earlier version of a
// changed one, to run again at the next boot. A crash after it leaves
// stamps that the next apply, redoing the unit, removes.
func (e *executor) removeStamps() error {
	for i := range e.p.Files {
		f := &e.p.Files[i]
		if !f.Stamp || f.Op != OpRemove {
			continue
		}
		if err := e.removeStamp(f); err != nil {
			e.emit(Event{Action: EvFailed, Op: "remove", Unit: f.Unit, Path: f.Path, Reason: f.Reason, Error: err.Error()})
			return fmt.Errorf("%w; the unit files are in place and recorded: run hostprov apply again", err)
		}
		e.emit(Event{Action: EvRemoved, Unit: f.Unit, Path: f.Path, Reason: f.Reason})
	}
	return nil
}
