package pipeline

// Reading the inputs: the hook specs of files or of a directory, the
// configs to merge into an output, and a config to import, each at most one
// byte past what a spec may have. A mistake in what was given (a file that
// is not there, a directory for a file, a config too large) is a
// *ReadError, data that each caller words with how the input was given (the
// CLI with its flags); any other error is a failure to read.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hostprov/hostprov/internal/inputs"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/render"
)

// Specs names the hook specs to read: every *.yaml of Dir when it is set,
// else Files, each a file or "-" for Stdin.
type Specs struct {
	Files []string
	Dir   string
	Stdin io.Reader
}

// Source is the kind of input a ReadError is about.
type Source int

const (
	// SpecFile is a hook spec, or a kops manifest, read from a file.
	SpecFile Source = iota
	// SpecDir is the directory whose *.yaml files are the specs.
	SpecDir
	// MergeConfig is a config to merge into an output (render.MergeFile).
	MergeConfig
	// ImportConfig is a config to import as a hook spec.
	ImportConfig
)

// ReadProblem is what is wrong with an input that was given.
type ReadProblem int

const (
	// NotFound: there is no such file or directory.
	NotFound ReadProblem = iota
	// IsDir: a directory was given for a file.
	IsDir
	// TooLarge: the input has more than hooks.MaxSize bytes. A spec
	// that large is no ReadError: Load refuses it with a diagnostic at
	// its first line.
	TooLarge
)

// A ReadError is an input that could not be read for a mistake in what
// was given, rather than a failure to read it: a caller reports it as a
// usage error, in the words of how the input was given.
type ReadError struct {
	Source  Source
	Problem ReadProblem
	// Name is the input as given, or hooks.StdinName.
	Name string
}

func (e *ReadError) Error() string {
	switch {
	case e.Problem == NotFound && e.Source == SpecDir:
		return e.Name + ": no such directory"
	case e.Problem == NotFound:
		return e.Name + ": no such file"
	case e.Problem == IsDir:
		return e.Name + " is a directory"
	}
	return fmt.Sprintf("%s: larger than %d bytes", e.Name, hooks.MaxSize)
}

// ReadSpecs reads the specs s names, in order, named as given (hooks.StdinName
// for standard input). A spec is read up to one byte past hooks.MaxSize,
// which Load then refuses.
func ReadSpecs(s Specs) ([]inputs.File, error) {
	files := s.Files
	if s.Dir != "" {
		var err error
		if files, err = specsOfDir(s.Dir); err != nil {
			return nil, err
		}
	}
	var in []inputs.File
	for _, file := range files {
		name, data, err := readSpec(file, s.Stdin)
		if err != nil {
			return nil, err
		}
		in = append(in, inputs.File{Name: name, Data: data})
	}
	return in, nil
}

// specsOfDir lists the specs of a directory: its *.yaml files, in
// lexical order; hidden files (an editor's, a package manager's) are none.
func specsOfDir(dir string) ([]string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(abs)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, &ReadError{Source: SpecDir, Problem: NotFound, Name: dir}
		}
		return nil, err
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

// readSpec reads one spec, a file or (file "-") stdin, and returns its name.
func readSpec(file string, stdin io.Reader) (string, []byte, error) {
	if file == "-" {
		data, err := readStdin(stdin)
		return hooks.StdinName, data, err
	}
	data, err := readFile(SpecFile, file)
	return file, data, err
}

// ReadMerge reads the configs to merge into an output, each named as
// given and placed in its file's directory, which a config's relative
// references are read from.
func ReadMerge(names []string) ([]render.MergeFile, error) {
	var mfs []render.MergeFile
	for _, name := range names {
		data, dir, err := readConfig(MergeConfig, name)
		if err != nil {
			return nil, err
		}
		mfs = append(mfs, render.MergeFile{Name: name, Data: data, Dir: dir})
	}
	return mfs, nil
}

// ReadConfig reads a config to import, a file or (name "-") stdin, and
// returns it with the directory its relative references are read from:
// its file's, or the working directory for stdin.
func ReadConfig(name string, stdin io.Reader) (data []byte, dir string, err error) {
	if name != "-" {
		return readConfig(ImportConfig, name)
	}
	if data, err = readStdin(stdin); err != nil {
		return nil, "", err
	}
	if len(data) > hooks.MaxSize {
		return nil, "", &ReadError{Source: ImportConfig, Problem: TooLarge, Name: hooks.StdinName}
	}
	return data, ".", nil
}

// readConfig reads the config file name, of source, which may have at
// most hooks.MaxSize bytes, and returns it with its absolute directory.
func readConfig(source Source, name string) ([]byte, string, error) {
	data, err := readFile(source, name)
	if err != nil {
		return nil, "", err
	}
	if len(data) > hooks.MaxSize {
		return nil, "", &ReadError{Source: source, Problem: TooLarge, Name: name}
	}
	dir, err := filepath.Abs(filepath.Dir(name))
	if err != nil {
		return nil, "", err
	}
	return data, dir, nil
}

// readStdin reads standard input, at most one byte more than a spec may
// have, so that an endless input is refused without being read whole.
func readStdin(stdin io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(stdin, hooks.MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading standard input: %v", err)
	}
	return data, nil
}

// readFile reads the file name, of source, at most one byte more than a
// spec may have (see readAtMost).
func readFile(source Source, name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, &ReadError{Source: source, Problem: NotFound, Name: name}
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		fi = nil // read without knowing the size
	} else if fi.IsDir() {
		return nil, &ReadError{Source: source, Problem: IsDir, Name: name}
	}
	data, err := readAtMost(f, fi)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %v", name, err)
	}
	return data, nil
}

// readAtMost reads f, at most one byte more than a spec may have, so that
// a huge input is refused (by hooks.Parse, with a position) without being
// read whole. A regular file's size (fi, its stat, or nil) sizes the
// buffer once, as os.ReadFile does: growing it by doubling cleared and
// copied a large spec's bytes some 20 times (4% of a 10,000-hook render).
func readAtMost(f *os.File, fi os.FileInfo) ([]byte, error) {
	size := 512
	if fi != nil && fi.Mode().IsRegular() && fi.Size() > 0 {
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
