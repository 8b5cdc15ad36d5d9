package apply

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// accounts are the node's users and groups, from its /etc/passwd and
// /etc/group (below Root): a name in a hook means what it means on the
// node, not on the machine hostprov runs on.
type accounts struct {
	users, groups map[string]int
	// homes are the users' home directories, and shadow their password
	// hashes, for the users of /etc/shadow when it could be read.
	homes, shadow map[string]string
	// members are the users of each group's member list.
	members map[string][]string
}

// readAccounts reads the node's /etc/passwd and /etc/group, missing ones
// being empty.
func readAccounts(n nodeFS) (*accounts, error) {
	a := &accounts{users: map[string]int{}, groups: map[string]int{}, members: map[string][]string{},
		homes: map[string]string{}, shadow: map[string]string{}}
	for _, f := range []struct {
		path string
		into map[string]int
	}{{"/etc/passwd", a.users}, {"/etc/group", a.groups}} {
		w, err := n.walk(f.path)
		if err != nil {
			return nil, err
		}
		if w.dir == nil {
			continue
		}
		data, err := w.dir.ReadFile(path.Base(f.path), 64<<20)
		w.dir.Close()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fsError("reading", f.path, err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			fields := strings.Split(sc.Text(), ":")
			if len(fields) < 3 || fields[0] == "" || strings.HasPrefix(fields[0], "#") {
				continue
			}
			if id, err := strconv.Atoi(fields[2]); err == nil {
				if _, dup := f.into[fields[0]]; !dup {
					f.into[fields[0]] = id
				}
			}
			if f.path == "/etc/group" && len(fields) >= 4 && fields[3] != "" {
				a.members[fields[0]] = append(a.members[fields[0]], strings.Split(fields[3], ",")...)
			}
			if f.path == "/etc/passwd" && len(fields) >= 6 {
				if _, dup := a.homes[fields[0]]; !dup {
					a.homes[fields[0]] = fields[5]
				}
			}
		}
	}
	return a, nil
}

// readShadow reads the users' password hashes from the node's /etc/shadow,
// when this process may (a plan need not run as root): a user missing from
// shadow is one whose hash is not known. Only a plan with a passwordHash
// reads it.
func (a *accounts) readShadow(n nodeFS) {
	w, err := n.walk("/etc/shadow")
	if err != nil || w.dir == nil {
		return
	}
	data, err := w.dir.ReadFile("shadow", 64<<20)
	w.dir.Close()
	if err != nil {
		return
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		fields := strings.Split(line, ":")
		if len(fields) >= 2 && fields[0] != "" {
			if _, dup := a.shadow[fields[0]]; !dup {
				a.shadow[fields[0]] = fields[1]
			}
		}
	}
}

// id resolves a user or group of a hook: "" is root (0), a number is
// itself, a name is looked up in the node's file.
func (a *accounts) id(name string, user bool) (int, error) {
	if name == "" {
		return 0, nil
	}
	if n, err := strconv.Atoi(name); err == nil && n >= 0 {
		return n, nil
	}
	m, file := a.groups, "/etc/group"
	if user {
		m, file = a.users, "/etc/passwd"
	}
	if id, ok := m[name]; ok {
		return id, nil
	}
	kind := "group"
	if user {
		kind = "user"
	}
	return 0, fmt.Errorf("%s %q is not in the node's %s; create it first (a users: entry of a hook applied earlier, or the image), or give its numeric id", kind, name, file)
}
