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
// words of the flags of c; a problem the flags add nothing to is said as
// the pipeline says it.
func readWords(c *cobra.Command, re *pipeline.ReadError) string {
	type problem struct {
		source  pipeline.Source
		problem pipeline.ReadProblem
	}
	name := re.Name
	switch (problem{re.Source, re.Problem}) {
	case problem{pipeline.SpecDir, pipeline.NotFound}:
		return name + ": no such directory; give the directory of hook specs with -d DIR"
	case problem{pipeline.SpecFile, pipeline.NotFound}:
		return name + ": no such file; give the hook spec with -f FILE (or -f - for standard input)"
	case problem{pipeline.SpecFile, pipeline.IsDir}:
		if c.Flags().Lookup("dir") != nil {
			return fmt.Sprintf("%s is a directory: -f reads one spec file; read every *.yaml file of a directory with -d %s", name, name)
		}
		return name + " is a directory: -f reads one spec file"
	case problem{pipeline.MergeConfig, pipeline.IsDir}:
		return "--merge " + name + " is a directory: give one config file, and --merge again for each other"
	case problem{pipeline.MergeConfig, pipeline.NotFound}, problem{pipeline.MergeConfig, pipeline.TooLarge}:
		return "--merge " + re.Error()
	case problem{pipeline.ImportConfig, pipeline.IsDir}:
		return name + " is a directory: import reads one config file"
	}
	return re.Error()
}
