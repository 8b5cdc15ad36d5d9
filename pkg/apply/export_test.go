package apply

import (
	"context"
	"os"

	"github.com/hostprov/hostprov/internal/fsutil"
)

// FileOps lets tests replace the file writer, to simulate a crash at every
// write.
type FileOps interface {
	WriteFile(path string, data []byte, perm os.FileMode) error
	WriteFiles(files []fsutil.File) (int, error)
	Remove(path string) error
}

// OSFiles is the real file writer.
var OSFiles FileOps = osFiles{}

func ExecuteWith(ctx context.Context, p *Plan, sd Systemd, log Logger, files FileOps) (*Result, error) {
	return execute(ctx, p, sd, log, files)
}
