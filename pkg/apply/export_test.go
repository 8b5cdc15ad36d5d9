package apply

import (
	"context"
	"time"

	"github.com/hostprov/hostprov/internal/fsutil"
)

// FileOps lets tests replace the file writer, to simulate a crash at every
// write.
type FileOps interface {
	WriteFiles(files []fsutil.File) (int, error)
	Prepare(files []fsutil.File) (*fsutil.Batch, error)
	Commit(b *fsutil.Batch) (int, error)
	Remove(dir *fsutil.Dir, name string) error
	RemoveEmptyDir(dir *fsutil.Dir, name string) error
}

// OSFiles is the real file writer.
var OSFiles FileOps = osFiles{}

func ExecuteWith(ctx context.Context, p *Plan, sd Systemd, log Logger, files FileOps) (*Result, error) {
	return execute(ctx, p, sd, log, files)
}

// SetSysusers replaces the systemd-sysusers apply runs, and returns a
// function that puts it back.
func SetSysusers(cmd string) func() {
	old := sysusersCommand
	sysusersCommand = cmd
	return func() { sysusersCommand = old }
}

// SetFetchRetryBase sets the first pause between two tries of a download,
// for tests that cannot wait seconds; it returns the function that puts
// the default back.
func SetFetchRetryBase(d time.Duration) (restore func()) {
	old := fetchRetryBase
	fetchRetryBase = d
	return func() { fetchRetryBase = old }
}

// ParseState is parseState, for the tests of what a state file may hold.
func ParseState(data []byte) (*State, error) { return parseState(data) }

// MaxStateSize is the largest state file apply reads.
const MaxStateSize = maxStateSize
