package rig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// removeCgroup removes a cgroup and the tree systemd made below it, deepest
// first (a cgroup directory goes only once it has no children). The kernel
// frees a cgroup shortly after its last process is reaped, so EBUSY is
// retried for a moment.
func removeCgroup(cg string) error {
	var err error
	for i := 0; i < 100; i++ {
		var dirs []string
		filepath.WalkDir(cg, func(p string, d fs.DirEntry, werr error) error {
			if werr == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		if len(dirs) == 0 {
			return nil
		}
		slices.Reverse(dirs)
		err = nil
		for _, d := range dirs {
			if e := syscall.Rmdir(d); e != nil && !errors.Is(e, fs.ErrNotExist) {
				err = fmt.Errorf("remove cgroup %s: %w", d, e)
			}
		}
		if err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// makeRigDir makes the host directory that holds everything of a rig.
// Not t.TempDir(): its path grows with the test's name, and the relay
// socket's path must stay below the 108 bytes a unix socket address holds.
func makeRigDir() (string, error) {
	base := os.TempDir()
	if len(base) > 40 {
		base = "/tmp"
	}
	return os.MkdirTemp(base, fmt.Sprintf("%s%d-", rigPrefix, os.Getpid()))
}

// removeStale removes the cgroups and directories of rigs whose test
// process no longer exists: it was killed before its cleanup ran (its rigs
// died with it, by Pdeathsig). A cgroup that still holds processes cannot
// be removed and stays; a directory with mounts below it is left alone.
func removeStale(cgroot string) {
	for _, parent := range []string{cgroot, os.TempDir(), "/tmp"} {
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			rest, ok := strings.CutPrefix(e.Name(), rigPrefix)
			if !ok || !e.IsDir() {
				continue
			}
			pidText, _, _ := strings.Cut(rest, "-")
			pid, err := strconv.Atoi(pidText)
			if err != nil || pid == os.Getpid() || syscall.Kill(pid, 0) != syscall.ESRCH {
				continue
			}
			path := filepath.Join(parent, e.Name())
			if parent == cgroot {
				_ = removeCgroup(path)
			} else if len(mountsUnder(path)) == 0 {
				_ = os.RemoveAll(path)
			}
		}
	}
}

// mountsUnder lists the host's mount points at or below dir.
func mountsUnder(dir string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var found []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		// Field 5 is the mount point, with spaces and such octal-escaped;
		// dir (from MkdirTemp) needs no escaping.
		if mp := fields[4]; mp == dir || strings.HasPrefix(mp, dir+"/") {
			found = append(found, mp)
		}
	}
	return found
}
