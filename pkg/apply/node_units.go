package apply

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// unitSearchPath is where systemd's system manager looks for unit files
// (systemd.unit(5), "systemd-analyze unit-paths"): the control, transient
// and generator directories, the administrator's and the runtime ones with
// their attached (portable) units, and the vendor ones, /lib/systemd/system
// for systems whose /lib is not merged into /usr (after /usr/lib, where
// Debian's systemd has it before: on a merged /usr both are one directory,
// named then by its own path). A unit file in any of them makes the unit
// the node's own.
var unitSearchPath = []string{
	"/etc/systemd/system.control",
	"/run/systemd/system.control",
	"/run/systemd/transient",
	"/run/systemd/generator.early",
	"/etc/systemd/system",
	"/etc/systemd/system.attached",
	"/run/systemd/system",
	"/run/systemd/system.attached",
	"/run/systemd/generator",
	"/usr/local/lib/systemd/system",
	"/usr/lib/systemd/system",
	"/lib/systemd/system",
	"/run/systemd/generator.late",
}

// nodeEntry is a name of the unit search path: a unit file, a link (an
// alias, a linked unit or a mask), or an enable link in a .wants,
// .requires or .upholds directory.
type nodeEntry struct {
	path string // the node path
	link string // a symbolic link's target
	// wants marks an enable link, inUnitDir an entry of the plan's own
	// unit directory.
	wants, inUnitDir bool
}

// nodeUnits indexes, by name, every entry of the node's unit search path,
// in systemd's order. Under Root the directories are those of the node's
// tree: a symbolic link on their way (/lib -> usr/lib) is followed inside
// it, an absolute one from Root. The node's /run is read as it is: in an
// image (hostprov --root) it is normally empty, as generators and transient
// units exist only once it boots.
func nodeUnits(opts Options) (map[string][]nodeEntry, error) {
	root := opts.Root
	if root == "" {
		root = "/"
	}
	unitDir, _, err := resolveNodePath(root, opts.unitDir())
	if err != nil {
		return nil, err
	}
	index := map[string][]nodeEntry{}
	seen := map[string]bool{}
	for _, dir := range unitSearchPath {
		real, ok, err := resolveNodePath(root, dir)
		if err != nil {
			return nil, err
		}
		if !ok || seen[real] {
			continue // absent, or /lib/systemd/system on a merged /usr
		}
		seen[real] = true
		if err := indexDir(index, filepath.Join(root, real), dir, real == unitDir); err != nil {
			return nil, err
		}
	}
	return index, nil
}

// indexDir adds the entries of the unit directory at host (dir as the node
// sees it) and of its .wants, .requires and .upholds directories.
func indexDir(index map[string][]nodeEntry, host, dir string, own bool) error {
	entries, err := readDirIfAny(host)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		full := filepath.Join(host, name)
		switch {
		case e.IsDir():
			if strings.HasSuffix(name, ".wants") || strings.HasSuffix(name, ".requires") || strings.HasSuffix(name, ".upholds") {
				links, err := readDirIfAny(full)
				if err != nil {
					return err
				}
				for _, l := range links {
					ne := nodeEntry{path: path.Join(dir, name, l.Name()), wants: true, inUnitDir: own}
					ne.link, _ = os.Readlink(filepath.Join(full, l.Name()))
					index[l.Name()] = append(index[l.Name()], ne)
				}
			}
		default:
			ne := nodeEntry{path: path.Join(dir, name), inUnitDir: own}
			if e.Type()&fs.ModeSymlink != 0 {
				ne.link, _ = os.Readlink(full)
			}
			index[name] = append(index[name], ne)
		}
	}
	return nil
}

func readDirIfAny(dir string) ([]os.DirEntry, error) {
	es, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, fsError("reading the unit directory", dir, err)
	}
	return es, nil
}

// resolveNodePath resolves the symbolic links of the node path p as the
// node would, inside root, and returns the node path it names; ok is false
// when it does not exist.
func resolveNodePath(root, p string) (real string, ok bool, err error) {
	parts := strings.Split(p, "/")
	cur := "/"
	for hops := 0; len(parts) > 0; {
		name := parts[0]
		parts = parts[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, name)
		host := filepath.Join(root, next)
		fi, err := os.Lstat(host)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return "", false, nil
		}
		if err != nil {
			return "", false, fsError("reading", host, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > 40 {
			return "", false, nil // a loop: systemd cannot read it either
		}
		target, err := os.Readlink(host)
		if err != nil {
			return "", false, fsError("reading", host, err)
		}
		if path.IsAbs(target) {
			cur = "/"
		}
		parts = append(strings.Split(target, "/"), parts...)
	}
	return cur, true, nil
}
