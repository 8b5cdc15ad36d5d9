package cli

// Reading the inputs of the commands: the spec files of -f and -d, and the
// configs of --merge, each at most one byte past what a spec may have.

import (
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/render"
)

// specDir lists the specs of a directory (-d): its *.yaml files, in
// lexical order; hidden files (an editor's, a package manager's) are none.
func specDir(dir string) ([]string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, failure("%v", err)
	}
	ents, err := os.ReadDir(abs)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, invalid("%s: no such directory; give the directory of hook specs with -d DIR", dir)
		}
		return nil, failure("%v", err)
	}
	var files []string
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".yaml") || e.IsDir() {
			continue
		}
		files = append(files, filepath.Join(abs, n))
	}
	return files, nil
}

func readSpec(c *cobra.Command, file string) (string, []byte, error) {
	// Read at most one byte more than a spec may have, so that an
	// endless or huge input is refused (by hooks.Parse, with a position)
	// without being read whole.
	if file == "-" {
		data, err := io.ReadAll(io.LimitReader(c.InOrStdin(), hooks.MaxSize+1))
		if err != nil {
			return "", nil, failure("reading standard input: %v", err)
		}
		return "<stdin>", data, nil
	}
	f, err := os.Open(file)
	if err != nil {
		if os.IsNotExist(err) {
			return "", nil, invalid("%s: no such file; give the hook spec with -f FILE (or -f - for standard input)", file)
		}
		return "", nil, failure("%v", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		if c.Flags().Lookup("dir") != nil {
			return "", nil, invalid("%s is a directory: -f reads one spec file; read every *.yaml file of a directory with -d %s", file, file)
		}
		return "", nil, invalid("%s is a directory: -f reads one spec file", file)
	}
	data, err := readAtMost(f)
	if err != nil {
		return "", nil, failure("reading %s: %v", file, err)
	}
	return file, data, nil
}

// readAtMost reads f, at most one byte more than a spec may have, so that
// a huge input is refused (by hooks.Parse, with a position) without being
// read whole. A regular file's size sizes the buffer once, as os.ReadFile
// does: growing it by doubling cleared and copied a large spec's bytes
// some 20 times (4% of a 10,000-hook render).
func readAtMost(f *os.File) ([]byte, error) {
	size := 512
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
		size = int(min(fi.Size(), hooks.MaxSize)) + 1 // +1: the read that finds EOF
	}
	r := io.LimitReader(f, hooks.MaxSize+1)
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// readMerge reads a --merge file, at most as much as a spec may have.
func readMerge(name string) (render.MergeFile, error) {
	f, err := os.Open(name)
	if err != nil {
		if os.IsNotExist(err) {
			return render.MergeFile{}, invalid("--merge %s: no such file", name)
		}
		return render.MergeFile{}, failure("%v", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return render.MergeFile{}, invalid("--merge %s is a directory: give one config file, and --merge again for each other", name)
	}
	data, err := readAtMost(f)
	if err != nil {
		return render.MergeFile{}, failure("reading %s: %v", name, err)
	}
	if len(data) > hooks.MaxSize {
		return render.MergeFile{}, invalid("--merge %s: larger than %d bytes", name, hooks.MaxSize)
	}
	dir, err := filepath.Abs(filepath.Dir(name))
	if err != nil {
		return render.MergeFile{}, failure("%v", err)
	}
	return render.MergeFile{Name: name, Data: data, Dir: dir}, nil
}
