package apply

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hostprov/hostprov/pkg/units"
)

// Offline is the Systemd of a node's file system mounted at Root, with no
// manager running (hostprov --root): Enable, Disable, Mask and Unmask make
// and remove exactly the links `systemctl --root=ROOT enable|disable|mask|
// unmask` makes, from the units' [Install] sections; Reload, Start, Restart
// and Stop return ErrSkipped, which Execute logs as skipped. It never talks
// to D-Bus.
//
// Enable follows [Install] as systemd 252 does: WantedBy= links the unit
// into TARGET.wants/, RequiredBy= into TARGET.requires/, UpheldBy= (systemd
// 254 and later) into TARGET.upholds/; Alias= links the alias name to the
// unit; Also= enables those units too; a template is enabled as its
// DefaultInstance= (or not at all without one). Links point at the unit
// file's path as the node sees it (/etc/systemd/system/a.service), like
// systemctl's.
type Offline struct {
	// Root is the directory the node's file system is mounted on.
	Root string
	// UnitDir is the directory links are made in, as the node sees it
	// (default /etc/systemd/system).
	UnitDir string
}

// NewOffline returns the offline Systemd for a root and a unit directory.
func NewOffline(root, unitDir string) *Offline {
	return &Offline{Root: root, UnitDir: orDefault(unitDir, DefaultUnitDir)}
}

var _ Systemd = (*Offline)(nil)

// searchPath is where units are looked up, in systemd's order of
// precedence for the system manager.
func (o *Offline) searchPath() []string {
	dirs := []string{o.UnitDir}
	for _, d := range []string{"/etc/systemd/system", "/run/systemd/system", "/usr/local/lib/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system"} {
		if d != o.UnitDir {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// host turns a path on the node into one on this machine.
func (o *Offline) host(p string) string { return filepath.Join(o.Root, filepath.FromSlash(p)) }

// find returns the node path of the file that defines name (its template's
// for an instance without a file of its own), or "" when there is none.
// A name masked in the unit directory is reported by masked.
func (o *Offline) find(name string) (file string, masked bool) {
	cands := []string{name}
	if t := templateOf(name); t != "" && t != name {
		cands = append(cands, t)
	}
	for _, c := range cands {
		for _, d := range o.searchPath() {
			p := path.Join(d, c)
			fi, err := os.Lstat(o.host(p))
			if err != nil {
				continue
			}
			if fi.Mode()&fs.ModeSymlink != 0 {
				if t, _ := os.Readlink(o.host(p)); t == "/dev/null" {
					return "", true
				}
			}
			if _, err := os.Stat(o.host(p)); err == nil {
				return p, false
			}
		}
	}
	return "", false
}

// templateOf returns the template of an instance name ("a@.service" for
// "a@x.service"), the name itself for a template, and "" otherwise.
func templateOf(name string) string {
	at := strings.IndexByte(name, '@')
	dot := strings.LastIndexByte(name, '.')
	if at < 0 || dot < at {
		return ""
	}
	return name[:at+1] + name[dot:]
}

func isTemplate(name string) bool { return templateOf(name) == name }

// install is what a unit's [Install] says.
type install struct {
	wantedBy, requiredBy, upheldBy, alias, also []string
	defaultInstance                             string
}

func (o *Offline) readInstall(file string) (install, error) {
	data, err := os.ReadFile(o.host(file))
	if err != nil {
		return install{}, err
	}
	f, err := units.Parse(data)
	if err != nil {
		return install{}, fmt.Errorf("%s: %v", file, err)
	}
	// Like systemd, every value is a space-separated list, and an empty
	// assignment resets the list.
	list := func(key string) []string {
		var out []string
		for _, v := range f.Values(units.SectionInstall, key) {
			if v == "" {
				out = nil
				continue
			}
			out = append(out, strings.Fields(v)...)
		}
		return out
	}
	return install{
		wantedBy: list("WantedBy"), requiredBy: list("RequiredBy"), upheldBy: list("UpheldBy"),
		alias: list("Alias"), also: list("Also"),
		defaultInstance: lastValue(f.Values(units.SectionInstall, "DefaultInstance")),
	}, nil
}

// Enable makes the links of the units' [Install] sections, unit by unit:
// a unit that cannot be enabled (no unit file, masked, a file in the place
// of a link) does not keep the others from being enabled, and the error is
// then UnitErrors, naming each unit that failed. As with systemctl --root,
// what a unit orders itself after or requires (After=, Requires=, ...) need
// not exist in the image: enabling reads only [Install]. A unit named by
// Also= that is missing or masked is skipped, as systemctl does ("Failed to
// enable auxiliary unit, ignoring"), and reported as a change of type
// "auxiliary unit failed".
func (o *Offline) Enable(_ context.Context, names []string) ([]LinkChange, error) {
	var changes []LinkChange
	failed := UnitErrors{}
	seen := map[string]bool{}
	for _, n := range names {
		if err := o.enable(n, false, seen, &changes); err != nil {
			failed[n] = err
		}
	}
	if len(failed) > 0 {
		return changes, failed
	}
	return changes, nil
}

// enable enables one unit and the units of its Also=, which are auxiliary.
func (o *Offline) enable(name string, auxiliary bool, seen map[string]bool, changes *[]LinkChange) error {
	if seen[name] {
		return nil
	}
	seen[name] = true
	file, masked := o.find(name)
	if auxiliary && (masked || file == "") {
		*changes = append(*changes, LinkChange{Type: ChangeAuxiliaryFailed, Path: name})
		return nil
	}
	if masked {
		return fmt.Errorf("unit %s is masked in the image; unmask it first (or set mask: false)", name)
	}
	if file == "" {
		return fmt.Errorf("unit file %s does not exist in the image (searched %s); install the package that ships it into the image, or do not enable it", name, strings.Join(o.searchPath(), ", "))
	}
	in, err := o.readInstall(file)
	if err != nil {
		return err
	}
	linkName := name
	if isTemplate(name) {
		linkName = ""
		if in.defaultInstance != "" {
			at := strings.IndexByte(name, '@')
			linkName = name[:at+1] + in.defaultInstance + name[at+1:]
		}
	}
	if linkName != "" {
		for _, dep := range []struct {
			suffix  string
			targets []string
		}{{".wants", in.wantedBy}, {".requires", in.requiredBy}, {".upholds", in.upheldBy}} {
			for _, t := range dep.targets {
				if err := o.link(path.Join(o.UnitDir, t+dep.suffix, linkName), file, changes); err != nil {
					return err
				}
			}
		}
	}
	for _, a := range in.alias {
		if err := o.link(path.Join(o.UnitDir, a), file, changes); err != nil {
			return err
		}
	}
	for _, a := range in.also {
		if err := o.enable(a, true, seen, changes); err != nil {
			return err
		}
	}
	return nil
}

// link makes the symlink at (node path) p pointing to dest, unless it is
// there already; a different file in its place is an error, as in
// systemctl.
func (o *Offline) link(p, dest string, changes *[]LinkChange) error {
	hp := o.host(p)
	if t, err := os.Readlink(hp); err == nil {
		if t == dest {
			return nil
		}
		return fmt.Errorf("cannot link %s to %s: it is a link to %s already", p, dest, t)
	} else if _, err := os.Lstat(hp); err == nil {
		return fmt.Errorf("cannot link %s to %s: a file is in its place", p, dest)
	}
	if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
		return fsError("creating", filepath.Dir(p), err)
	}
	if err := os.Symlink(dest, hp); err != nil {
		return fsError("linking", p, err)
	}
	*changes = append(*changes, LinkChange{Type: "symlink", Path: p, Destination: dest})
	return nil
}

// Disable removes the links in the unit directory that enable the units
// (and the units of their Also=): links named after them or pointing at
// them, and their instances' for a template. A masked unit is left alone,
// as systemctl does. Emptied .wants/, .requires/ and .upholds/ directories
// are removed.
func (o *Offline) Disable(_ context.Context, names []string) ([]LinkChange, error) {
	set := map[string]bool{}
	var add func(name string)
	add = func(name string) {
		if set[name] {
			return
		}
		file, masked := o.find(name)
		if masked {
			return
		}
		set[name] = true
		if file == "" {
			return
		}
		set[file] = true
		if in, err := o.readInstall(file); err == nil {
			for _, a := range in.also {
				add(a)
			}
		}
	}
	for _, n := range names {
		add(n)
	}
	matches := func(linkName, dest string) bool {
		if dest == "/dev/null" {
			return false
		}
		if set[dest] || set[path.Base(dest)] || set[linkName] {
			return true
		}
		t := templateOf(linkName)
		return t != "" && set[t] && path.Base(dest) == t
	}
	var changes []LinkChange
	root := o.host(o.UnitDir)
	ents, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fsError("reading", o.UnitDir, err)
	}
	var remove func(dir, nodeDir string, ents []os.DirEntry, top bool) error
	remove = func(dir, nodeDir string, ents []os.DirEntry, top bool) error {
		for _, e := range ents {
			hp := filepath.Join(dir, e.Name())
			np := path.Join(nodeDir, e.Name())
			switch {
			case e.Type()&fs.ModeSymlink != 0:
				dest, err := os.Readlink(hp)
				if err != nil || !matches(e.Name(), dest) {
					continue
				}
				if err := os.Remove(hp); err != nil {
					return fsError("removing", np, err)
				}
				changes = append(changes, LinkChange{Type: "unlink", Path: np})
			case e.IsDir() && top && isDepDir(e.Name()):
				sub, err := os.ReadDir(hp)
				if err != nil {
					return fsError("reading", np, err)
				}
				if err := remove(hp, np, sub, false); err != nil {
					return err
				}
				if rest, err := os.ReadDir(hp); err == nil && len(rest) == 0 {
					os.Remove(hp)
				}
			}
		}
		return nil
	}
	if err := remove(root, o.UnitDir, ents, true); err != nil {
		return changes, err
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	return changes, nil
}

func isDepDir(name string) bool {
	return strings.HasSuffix(name, ".wants") || strings.HasSuffix(name, ".requires") || strings.HasSuffix(name, ".upholds")
}

// Mask links the units to /dev/null in the unit directory. A file in the
// place of the link is an error, as in systemctl.
func (o *Offline) Mask(_ context.Context, names []string) ([]LinkChange, error) {
	var changes []LinkChange
	for _, n := range names {
		if err := o.link(path.Join(o.UnitDir, n), "/dev/null", &changes); err != nil {
			return changes, err
		}
	}
	return changes, nil
}

// Unmask removes the units' /dev/null links from the unit directory.
func (o *Offline) Unmask(_ context.Context, names []string) ([]LinkChange, error) {
	var changes []LinkChange
	for _, n := range names {
		p := path.Join(o.UnitDir, n)
		if t, err := os.Readlink(o.host(p)); err != nil || t != "/dev/null" {
			continue
		}
		if err := os.Remove(o.host(p)); err != nil {
			return changes, fsError("removing", p, err)
		}
		changes = append(changes, LinkChange{Type: "unlink", Path: p})
	}
	return changes, nil
}

// Reload, Start, Restart and Stop need a running manager: ErrSkipped.
func (o *Offline) Reload(context.Context) error          { return ErrSkipped }
func (o *Offline) Start(context.Context, string) error   { return ErrSkipped }
func (o *Offline) Restart(context.Context, string) error { return ErrSkipped }
func (o *Offline) Stop(context.Context, string) error    { return ErrSkipped }

// Status says what can be known without a manager: whether the unit file
// is there (LoadState loaded, not-found or masked) and its enablement
// (UnitFileState enabled, disabled, static or masked). The runtime fields
// are empty.
func (o *Offline) Status(_ context.Context, name string) (UnitStatus, error) {
	st := UnitStatus{Name: name}
	file, masked := o.find(name)
	switch {
	case masked:
		st.LoadState, st.UnitFileState = "masked", "masked"
		return st, nil
	case file == "":
		st.LoadState = "not-found"
		return st, nil
	}
	st.LoadState = "loaded"
	in, err := o.readInstall(file)
	if err != nil {
		st.LoadState = "error"
		return st, nil
	}
	if len(in.wantedBy)+len(in.requiredBy)+len(in.upheldBy)+len(in.alias)+len(in.also) == 0 {
		st.UnitFileState = "static"
		return st, nil
	}
	st.UnitFileState = "disabled"
	linkName := name
	if isTemplate(name) && in.defaultInstance != "" {
		at := strings.IndexByte(name, '@')
		linkName = name[:at+1] + in.defaultInstance + name[at+1:]
	}
	for _, dep := range []struct {
		suffix  string
		targets []string
	}{{".wants", in.wantedBy}, {".requires", in.requiredBy}, {".upholds", in.upheldBy}} {
		for _, t := range dep.targets {
			if dest, err := os.Readlink(o.host(path.Join(o.UnitDir, t+dep.suffix, linkName))); err == nil && dest == file {
				st.UnitFileState = "enabled"
			}
		}
	}
	return st, nil
}
