package apply

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hostprov/hostprov/internal/fsutil"
)

// lockFileName is the lock file in the state directory.
const lockFileName = "lock"

// Lock serializes applies on a node: it takes an exclusive flock on the
// lock file in stateDir and returns the function that releases it. When
// another process holds the lock, Lock calls waiting once with that
// process's id (0 when unknown) and waits until the lock is free or ctx
// ends; with noWait it fails at once instead. The lock is released by the
// kernel when the process dies, so a crashed apply never blocks the next.
func Lock(ctx context.Context, stateDir string, noWait bool, waiting func(pid int)) (unlock func(), err error) {
	p := filepath.Join(stateDir, lockFileName)
	// Through the directory, which is never a link (the lock would be
	// made in the link's target), and never through a link of its own.
	dir, err := fsutil.OpenDir(stateDir)
	if errors.Is(err, fsutil.ErrNotDir) {
		return nil, linkedStateDir(stateDir)
	}
	if err != nil {
		return nil, fsError("opening the state directory", stateDir, err)
	}
	f, err := dir.OpenFile(lockFileName, os.O_RDWR|os.O_CREATE, 0o600)
	dir.Close()
	if err != nil {
		return nil, fsError("opening the lock file", p, err)
	}
	fd := int(f.Fd())
	err = syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		pid := readPID(p)
		if noWait {
			f.Close()
			return nil, fmt.Errorf("another hostprov apply (pid %d) is running; wait for it to finish, or run without --no-wait to wait", pid)
		}
		if waiting != nil {
			waiting(pid)
		}
		err = waitLock(ctx, fd)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", p, err)
	}
	// Say who holds the lock, for the message of the next one to wait.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		f.Truncate(0)
		syscall.Flock(fd, syscall.LOCK_UN)
		f.Close()
	}, nil
}

// waitLock waits for the lock, polling so that ctx can end the wait (a
// blocking flock cannot be interrupted from Go).
func waitLock(ctx context.Context, fd int) error {
	delay := 5 * time.Millisecond
	for {
		err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		if delay < 200*time.Millisecond {
			delay *= 2
		}
	}
}

func readPID(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid
}
