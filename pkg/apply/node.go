package apply

import (
	"io/fs"
	"path"

	"github.com/hostprov/hostprov/internal/fsutil"
)

// nodeView is all the planner learns of the node, and all it may ask of
// it: every method reads, and none writes or talks to systemd, so that a
// plan changes nothing however it is made. diskNode is the node on this
// machine; the planner's tests give one held in memory.
type nodeView interface {
	// unitFile is what is at rel (NAME or NAME.d/FILE) in the unit
	// directory.
	unitFile(rel string) (diskFile, error)
	// path is what is at the node path p; no symbolic link on the way
	// is followed.
	path(p string) (nodePath, error)
	// missingParents are the parent directories of the node path p that
	// do not exist, from the top one down; what is at p is not read.
	missingParents(p string) ([]string, error)
	// dirNames are the names in the node directory p.
	dirNames(p string) ([]string, error)
	// accounts are the node's users and groups; with shadow, and when
	// it can be read, the password hashes of its /etc/shadow too.
	accounts(shadow bool) (*accounts, error)
	// stamps lists the stamp directory.
	stamps() (*stampDir, error)
	// units indexes the node's unit search path (see planner.shadows).
	units() (map[string][]nodeEntry, error)
	// findTool finds a program on the node (see Options.tool).
	findTool(name string) (string, error)
	// permissions are the warnings of what this process may not do on
	// the node (see Permissions).
	permissions() []Problem
}

// nodePath is what is at a node path.
type nodePath struct {
	onDisk
	// missing are the node paths of the parents that do not exist,
	// from the top one down.
	missing []string
	// bad says why nothing may be placed there: a parent is a symbolic
	// link or not a directory.
	bad string
}

// diskNode reads the node on this machine, below Options.Root.
type diskNode struct {
	opts Options
	fs   nodeFS
	dir  *fsutil.Dir // the unit directory; nil while it does not exist
}

var _ nodeView = (*diskNode)(nil)

// planNode is the node a plan of opts reads: Options.node when set, else
// the node on this machine, opened for the plan; done lets it go.
func planNode(opts Options) (node nodeView, done func(), err error) {
	if opts.node != nil {
		return opts.node, func() {}, nil
	}
	d, err := openNode(opts)
	if err != nil {
		return nil, nil, err
	}
	return d, d.close, nil
}

// openNode opens the node of opts for a plan; close lets it go.
func openNode(opts Options) (*diskNode, error) {
	dir, err := openUnitDir(opts)
	if err != nil {
		return nil, err
	}
	return &diskNode{opts: opts, fs: newNodeFS(opts), dir: dir}, nil
}

func (d *diskNode) close() { d.dir.Close() }

func (d *diskNode) unitFile(rel string) (diskFile, error) { return readDisk(d.dir, rel) }

func (d *diskNode) path(p string) (nodePath, error) {
	w, err := d.fs.walk(p)
	if err != nil {
		return nodePath{}, err
	}
	np := nodePath{missing: w.missing, bad: w.bad}
	if w.dir != nil {
		np.onDisk, err = look(w.dir, path.Base(p))
		w.dir.Close()
	}
	return np, err
}

func (d *diskNode) missingParents(p string) ([]string, error) {
	w, err := d.fs.walk(p)
	if err != nil {
		return nil, err
	}
	if w.dir != nil {
		w.dir.Close()
	}
	return w.missing, nil
}

func (d *diskNode) dirNames(p string) ([]string, error) {
	w, err := d.fs.walk(p)
	if err != nil {
		return nil, err
	}
	if w.dir == nil {
		return nil, fsError("reading", p, fs.ErrNotExist)
	}
	sub, err := w.dir.OpenDir(path.Base(p))
	w.dir.Close()
	if err != nil {
		return nil, fsError("reading", p, err)
	}
	defer sub.Close()
	ents, err := sub.ReadDir()
	if err != nil {
		return nil, fsError("reading", p, err)
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name
	}
	return names, nil
}

func (d *diskNode) accounts(shadow bool) (*accounts, error) {
	acc, err := readAccounts(d.fs)
	if err == nil && shadow {
		acc.readShadow(d.fs)
	}
	return acc, err
}

func (d *diskNode) stamps() (*stampDir, error)             { return d.opts.listStamps() }
func (d *diskNode) units() (map[string][]nodeEntry, error) { return nodeUnits(d.opts) }
func (d *diskNode) findTool(name string) (string, error)   { return d.opts.tool(name) }
func (d *diskNode) permissions() []Problem                 { return Permissions(d.opts) }
