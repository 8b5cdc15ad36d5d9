package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hostprov/hostprov/internal/pipeline"
)

// readFailed is the exit error of an input the pipeline could not read: a
// usage error that names the flag the input came with (a
// *pipeline.ReadError), else a failure.
func readFailed(c *cobra.Command, err error) error {
	var re *pipeline.ReadError
	if !errors.As(err, &re) {
		return failure("%v", err)
	}
	return invalid("%s", readWords(c, re))
}

// readWords says what is wrong with an input, and how to give it, in the
// words of the flags of c.
func readWords(c *cobra.Command, re *pipeline.ReadError) string {
	name := re.Name
	switch re.Source {
	case pipeline.SpecDir:
		return name + ": no such directory; give the directory of hook specs with -d DIR"
	case pipeline.SpecFile:
		switch {
		case re.Problem == pipeline.NotFound:
			return name + ": no such file; give the hook spec with -f FILE (or -f - for standard input)"
		case re.Problem == pipeline.IsDir && c.Flags().Lookup("dir") != nil:
			return fmt.Sprintf("%s is a directory: -f reads one spec file; read every *.yaml file of a directory with -d %s", name, name)
		case re.Problem == pipeline.IsDir:
			return name + " is a directory: -f reads one spec file"
		}
	case pipeline.MergeConfig:
		if re.Problem == pipeline.IsDir {
			return "--merge " + name + " is a directory: give one config file, and --merge again for each other"
		}
		return "--merge " + re.Error()
	case pipeline.ImportConfig:
		if re.Problem == pipeline.IsDir {
			return name + " is a directory: import reads one config file"
		}
	}
	return re.Error()
}
