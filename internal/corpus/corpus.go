// Package corpus finds the real-world material that tests compare hostprov
// with: shared/corpus beside the repository, which nobody here wrote and
// which is never copied into the project. Tests skip when it is absent.
package corpus

import (
	"bytes"
	"os"
	"path/filepath"
)

// Path returns the corpus directory joined with parts. The corpus is the
// shared/corpus folder beside the repository root, which is found from the
// working directory (a test runs in its package's directory) by go.mod.
// The path may not exist; callers skip their test then.
func Path(parts ...string) string {
	dir, err := os.Getwd()
	if err != nil {
		return filepath.Join(append([]string{"shared", "corpus"}, parts...)...)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			dir = d
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	return filepath.Join(append([]string{filepath.Dir(dir), "shared", "corpus"}, parts...)...)
}

// Strip removes a corpus file's provenance header: every line up to and
// including the one that contains "corpus-header-end". ok is false when the
// file has no such line, and then data is returned as it is.
func Strip(data []byte) (body []byte, ok bool) {
	i := bytes.Index(data, []byte("corpus-header-end"))
	if i < 0 {
		return data, false
	}
	nl := bytes.IndexByte(data[i:], '\n')
	if nl < 0 {
		return nil, true
	}
	return data[i+nl+1:], true
}
