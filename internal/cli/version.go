package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func newVersion() *cobra.Command {
	var output string
	c := &cobra.Command{
		Use:   "version [-o text|json]",
		Short: "Print hostprov's version and the revision it was built from",
		Long: `version prints hostprov's version and the revision it was built from, as --version
does. With -o json it prints one JSON object:

  {"version": "v1.2.3", "revision": "4819510f96b7...", "time": "2026-12-01T11:33:29Z",
   "modified": false, "go": "go1.24.0", "kubernetes": false}

version is the stamped or module version ("(devel)" when there is none); revision
(the full commit hash) and time are left out when no revision was recorded;
modified says whether the work tree had uncommitted changes; kubernetes whether
this build has the agent and controller commands.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			switch output {
			case outputText:
				fmt.Fprintln(c.OutOrStdout(), versionLine())
				return nil
			case outputJSON:
				bi, _ := debug.ReadBuildInfo()
				return writeJSON(c.OutOrStdout(), versionInfoOf(Version, bi))
			}
			return invalid("unknown -o %q: use text or json", output)
		},
	}
	registerOutput(c, &output)
	return c
}

// versionInfo is what version -o json prints; its field names are stable.
type versionInfo struct {
	Version    string `json:"version"`
	Revision   string `json:"revision,omitempty"`
	Time       string `json:"time,omitempty"`
	Modified   bool   `json:"modified"`
	Go         string `json:"go"`
	Kubernetes bool   `json:"kubernetes"`
}

// versionInfoOf is versionOf's facts, unabridged.
func versionInfoOf(stamped string, bi *debug.BuildInfo) versionInfo {
	v := versionInfo{Version: stamped, Go: runtime.Version(), Kubernetes: kubeBuild}
	if v.Version == "" && bi != nil && bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	if bi != nil {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.time":
				v.Time = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if v.Revision == "" {
		v.Time, v.Modified = "", false
	}
	return v
}

// versionLine is what hostprov version and hostprov --version print.
func versionLine() string {
	bi, _ := debug.ReadBuildInfo()
	return "hostprov " + versionOf(Version, bi)
}

// versionOf says which hostprov this is: the version stamped at build time
// (-X .../internal/cli.Version=v1.2.3), else the main module's version from
// the build information (a tag, or the pseudo-version Go derives from the
// commit), and the revision it was built from with its commit time and
// whether the work tree had changes. A build without version control
// information (go run, or -buildvcs=false) says so, and how to get one,
// unless it has a stamped version.
func versionOf(stamped string, bi *debug.BuildInfo) string {
	info := versionInfoOf(stamped, bi)
	v, rev, at, modified := info.Version, info.Revision, info.Time, info.Modified
	if rev == "" {
		if stamped != "" {
			// A release built from a source tree without git (an
			// archive): the stamped version says which hostprov it is.
			return v
		}
		return v + " (no revision recorded: build with make build, or go build -buildvcs=auto, in a git clone)"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	details := "revision " + rev
	if modified {
		details += " with uncommitted changes"
	}
	if at != "" {
		details += ", committed " + at
	}
	return v + " (" + details + ")"
}
