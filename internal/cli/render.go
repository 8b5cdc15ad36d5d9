package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/hostprov/hostprov/internal/pipeline"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/render"
	"github.com/hostprov/hostprov/pkg/render/butane"
	"github.com/hostprov/hostprov/pkg/render/cloudinit"
	"github.com/hostprov/hostprov/pkg/render/ignition"
	"github.com/hostprov/hostprov/pkg/render/kopshooks"
	"github.com/hostprov/hostprov/pkg/render/listing"
	"github.com/hostprov/hostprov/pkg/render/unitdir"
)

// renderFlags are the flags of render that only some formats take.
type renderFlags struct {
	out             string
	pretty          bool
	ignitionVersion string
	variant         string
	butaneVersion   string
	mime            bool
	kopsAPIVersion  string
	// storage is the specs' files, directories and links (pipeline.Result.Storage).
	storage compile.Storage
	// check, when set, runs the format's checks and writes nothing
	// (validate --format).
	check bool
	// merge are the configs of --merge, read before the spec; report
	// prints their diagnostics and says whether to go on.
	merge  []render.MergeFile
	report func(diags hooks.Diagnostics) error
}

// outputFormat is one output of render. check looks at the flags before the
// spec is read, so that a usage mistake writes nothing; write emits the
// units. flags are the format-specific flags (by name) the format takes:
// giving one to another format is a usage error that says which take it.
type outputFormat struct {
	name  string
	help  string
	flags []string
	check func(f *renderFlags) error
	write func(w io.Writer, f *renderFlags, us []compile.Unit) error
}

// formatSpecificFlags are the flags render refuses for a format that does
// not list them: a flag that would be silently ignored lets a user believe
// the output is what they asked for.
var formatSpecificFlags = []string{"out", "pretty", "ignition-version", "variant", "butane-version", "mime", "kops-api-version"}

// outputFormats are render's outputs, the default first.
var outputFormats = []outputFormat{
	{
		name:  "ignition",
		help:  "an Ignition config (--ignition-version, default " + ignition.DefaultVersion + "; --pretty indents it) on standard output",
		flags: []string{"ignition-version", "pretty"},
		check: func(f *renderFlags) error {
			_, err := f.ignitionOptions().Resolve()
			return optionError(err)
		},
		write: func(w io.Writer, f *renderFlags, us []compile.Unit) error {
			b, err := ignition.Render(us, f.ignitionOptions())
			return f.writeConfig(w, "the Ignition config", b, err, func(b []byte) ([]byte, hooks.Diagnostics, error) {
				return ignition.Merge(b, us, f.ignitionOptions(), f.merge)
			})
		},
	},
	{
		name:  "butane",
		help:  "a Butane config (--variant fcos|flatcar, --butane-version or --ignition-version) on standard output",
		flags: []string{"ignition-version", "variant", "butane-version"},
		check: func(f *renderFlags) error {
			_, err := f.butaneOptions().Resolve()
			return optionError(err)
		},
		write: func(w io.Writer, f *renderFlags, us []compile.Unit) error {
			b, err := butane.Render(us, f.butaneOptions())
			return f.writeConfig(w, "the Butane config", b, err, func(b []byte) ([]byte, hooks.Diagnostics, error) {
				return butane.Merge(b, us, f.butaneOptions(), f.merge)
			})
		},
	},
	{
		name:  "cloud-init",
		help:  "a #cloud-config document (--mime wraps it in a MIME message) on standard output",
		flags: []string{"mime"},
		write: func(w io.Writer, f *renderFlags, us []compile.Unit) error {
			// With configs to merge, the document is merged into and
			// then wrapped, by Merge.
			b, err := cloudinit.Render(us, cloudinit.Options{MIME: f.mime && len(f.merge) == 0, Storage: f.storage})
			return f.writeConfig(w, "the cloud-config", b, err, func(b []byte) ([]byte, hooks.Diagnostics, error) {
				return cloudinit.Merge(b, us, cloudinit.Options{MIME: f.mime, Storage: f.storage}, f.merge)
			})
		},
	},
	{
		name:  "kops",
		help:  "a hooks: list for a kops cluster or instance group spec (--kops-api-version) on standard output",
		flags: []string{"kops-api-version"},
		check: func(f *renderFlags) error {
			switch f.kopsAPIVersion {
			case "", kopshooks.V1Alpha2, kopshooks.V1Alpha3:
				return nil
			}
			return invalid("unknown --kops-api-version %q: use %s or %s", f.kopsAPIVersion, kopshooks.V1Alpha2, kopshooks.V1Alpha3)
		},
		write: func(w io.Writer, f *renderFlags, us []compile.Unit) error {
			b, err := kopshooks.Render(us, kopshooks.Options{APIVersion: f.kopsAPIVersion, Storage: f.storage})
			if err != nil {
				// The spec asks for what kops cannot express: the
				// input, not the machine, is at fault. A *KopsError
				// is reported at its hooks by render's RunE.
				var ke *kopshooks.Error
				if errors.As(err, &ke) {
					return err
				}
				return invalid("%v", err)
			}
			return write(w, b)
		},
	},
	{
		name: "units",
		help: `every unit file after a "# NAME" line, to read`,
		write: func(w io.Writer, f *renderFlags, us []compile.Unit) error {
			return write(w, append(listing.Render(us), storageText(f.storage)...))
		},
	},
	{
		name:  "dir",
		help:  "unit files and NAME.d/ drop-ins under --out DIR",
		flags: []string{"out"},
		check: func(f *renderFlags) error {
			if f.out == "" && !f.check {
				return invalid("--format dir needs --out DIR, the directory to write the units to")
			}
			return nil
		},
		write: func(_ io.Writer, f *renderFlags, us []compile.Unit) error {
			if !f.storage.Empty() {
				return invalid("--format dir writes a unit directory, and the spec has files, directories, links, users or groups, which belong elsewhere on the machine: render them with --format ignition, butane or cloud-init")
			}
			if f.check {
				return nil
			}
			if err := unitdir.Write(f.out, us); err != nil {
				return failure("writing units: %v", err)
			}
			return nil
		},
	},
}

// writeConfig writes the config an output's Render made (b, or its error
// err), named what ("the Ignition config"): as it is, or, with --merge
// files, what merge makes of it and them, after their diagnostics, and
// nothing when one is an error. A file, directory or link Render refused
// is returned as it is, for render's RunE to report at its entry; any
// other error of Render is a failure.
func (f *renderFlags) writeConfig(w io.Writer, what string, b []byte, err error,
	merge func([]byte) ([]byte, hooks.Diagnostics, error)) error {
	if err != nil {
		if storageRefused(err) {
			return err
		}
		return failure("building %s: %v", what, err)
	}
	if len(f.merge) == 0 {
		return write(w, b)
	}
	b, diags, err := merge(b)
	if err != nil {
		return failure("merging into %s: %v", what, err)
	}
	if err := f.report(diags); err != nil {
		return err
	}
	return write(w, b)
}

func (f *renderFlags) ignitionOptions() ignition.Options {
	return ignition.Options{Version: f.ignitionVersion, Pretty: f.pretty, Storage: f.storage}
}

func (f *renderFlags) butaneOptions() butane.Options {
	return butane.Options{Variant: f.variant, Version: f.butaneVersion, IgnitionVersion: f.ignitionVersion, Storage: f.storage}
}

// storageRefused reports whether err is an output's refusal of a file,
// directory or link (hooks.Diagnostics at the entries), which render's
// RunE reports like the spec's own problems.
func storageRefused(err error) bool {
	var ds hooks.Diagnostics
	return errors.As(err, &ds)
}

// storageText lists files, directories and links after the units of
// --format units, one line each.
func storageText(st compile.Storage) []byte {
	var b strings.Builder
	for _, x := range st.Directories {
		fmt.Fprintf(&b, "\n# directory %s (%04o, %s:%s)\n", x.Path, x.Mode, x.User, x.Group)
	}
	for _, x := range st.Files {
		from := "inline"
		switch {
		case x.Source != "":
			from = "from " + x.Source
		case x.Local != "":
			from = "from local " + x.Local
		}
		fmt.Fprintf(&b, "\n# file %s (%04o, %s:%s, %s)\n", x.Path, x.Mode, x.User, x.Group, from)
		if x.Contents != nil && utf8.Valid(x.Contents) {
			b.Write(x.Contents)
		}
	}
	for _, x := range st.Groups {
		fmt.Fprintf(&b, "\n# group %s%s\n", x.Name, accountText(x.GID, x.System))
	}
	for _, x := range st.Users {
		fmt.Fprintf(&b, "\n# user %s%s\n", x.Name, accountText(x.UID, x.System))
	}
	for _, x := range st.Links {
		kind := "symbolic link"
		if x.Hard {
			kind = "hard link"
		}
		var extra []string
		if !x.User.IsZero() || !x.Group.IsZero() {
			extra = append(extra, "owner "+x.User.String()+":"+x.Group.String())
		}
		if x.Overwrite {
			extra = append(extra, "overwrite")
		}
		more := ""
		if len(extra) > 0 {
			more = " (" + strings.Join(extra, ", ") + ")"
		}
		fmt.Fprintf(&b, "\n# %s %s -> %s%s\n", kind, x.Path, x.Target, more)
	}
	return []byte(b.String())
}

// accountText is the id and system flag of a user or group, for
// storageText.
func accountText(id *uint32, system bool) string {
	var parts []string
	if id != nil {
		parts = append(parts, fmt.Sprint(*id))
	}
	if system {
		parts = append(parts, "system")
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// optionError turns an output option that cannot be met into a usage error.
func optionError(err error) error {
	if err == nil {
		return nil
	}
	return invalid("%v", err)
}

func write(w io.Writer, b []byte) error {
	if _, err := w.Write(b); err != nil {
		return failure("%v", err)
	}
	return nil
}

func formatNames() []string {
	names := make([]string, len(outputFormats))
	for i, f := range outputFormats {
		names[i] = f.name
	}
	return names
}

// orList joins words as "a, b or c".
func orList(words []string) string {
	if len(words) <= 1 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// checkFormatFlags refuses a format-specific flag the format does not take.
func checkFormatFlags(c *cobra.Command, format outputFormat) error {
	for _, name := range formatSpecificFlags {
		if !c.Flags().Changed(name) || slices.Contains(format.flags, name) {
			continue
		}
		var takers []string
		for _, f := range outputFormats {
			if slices.Contains(f.flags, name) {
				takers = append(takers, f.name)
			}
		}
		return invalid("--%s is only for --format %s; --format %s does not use it", name, orList(takers), format.name)
	}
	return nil
}

func newRender() *cobra.Command {
	var (
		sf         specFlags
		format     string
		rf         renderFlags
		mergeFiles []string
	)
	var help strings.Builder
	for _, f := range outputFormats {
		fmt.Fprintf(&help, "  --format %-9s %s\n", f.name, f.help)
	}
	var butaneVersions strings.Builder
	for _, v := range butane.Versions() {
		fmt.Fprintf(&butaneVersions, "  %-8s %s -> Ignition %s\n", v.Variant, v.Version, v.IgnitionVersion)
	}
	c := &cobra.Command{
		Use:   "render [-f FILE]... | -d DIR [--format " + strings.Join(formatNames(), "|") + "] [--out DIR]",
		Short: "Render a hook spec to instance user data, a unit listing or a unit directory",
		Long: `Render reads a hook spec, checks it, and writes its units:

` + help.String() + `
Ignition spec versions: ` + strings.Join(ignition.Versions(), ", ") + `.
Butane versions and the Ignition version each translates to (the default is
the one for Ignition ` + ignition.DefaultVersion + `; --ignition-version picks the newest that
translates to it):

` + butaneVersions.String() + `
Nothing is written when the spec has an error.`,
		Args: specArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			of, err := rf.prepare(c, format, mergeFiles, &sf)
			if err != nil {
				return err
			}
			r, err := sf.load(c)
			if err != nil {
				return err
			}
			if r.Kops && !c.Flags().Changed("format") {
				// A kops user may expect hooks or units from a cluster
				// spec; the default output is user data. Say so, on
				// stderr, so that the output itself stays as asked.
				fmt.Fprintf(c.ErrOrStderr(), "hostprov: %s: kops manifests: rendering their hooks as %s, the default --format; --format kops gives hooks for a cluster spec, units a listing of the units\n",
					strings.Join(sf.files, ", "), format)
			}
			rf.storage = r.Storage
			return sf.outputVerdict(c, of.write(c.OutOrStdout(), &rf, r.Units))
		},
	}
	sf.register(c)
	c.Flags().StringVar(&format, "format", outputFormats[0].name, "output format: "+orList(formatNames()))
	// No -o: across hostprov's commands -o is --output (text or json), as
	// kubectl and terraform users read it; render's choice is --format.
	c.Flags().StringArrayVar(&mergeFiles, "merge", nil,
		"merge a config of your own into the output: an Ignition or Butane config (--format ignition, butane) or a cloud-config (cloud-init); repeat it for several, merged in order")
	c.Flags().StringVar(&rf.out, "out", "", "directory to write to, for --format dir")
	c.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if strings.Contains(err.Error(), "shorthand flag: 'o'") {
			return invalid("%v: render chooses its output with --format (%s), and --format dir writes to --out DIR", err, strings.Join(formatNames(), ", "))
		}
		return err
	})
	c.Flags().BoolVar(&rf.pretty, "pretty", false, "indent the Ignition JSON, for --format ignition")
	c.Flags().StringVar(&rf.ignitionVersion, "ignition-version", "",
		"Ignition spec version, for --format ignition (default "+ignition.DefaultVersion+") and butane: "+strings.Join(ignition.Versions(), ", "))
	c.Flags().StringVar(&rf.variant, "variant", "", "Butane variant, for --format butane: "+orList(butane.Variants())+" (default "+butane.Variants()[0]+")")
	c.Flags().StringVar(&rf.butaneVersion, "butane-version", "", "Butane spec version, for --format butane (default: the one for the Ignition version)")
	c.Flags().BoolVar(&rf.mime, "mime", false, "wrap the cloud-config in a multipart MIME message, for --format cloud-init")
	c.Flags().StringVar(&rf.kopsAPIVersion, "kops-api-version", "", "kops API version of the hooks, for --format kops: "+kopshooks.V1Alpha2+" (disabled: true, the default) or "+kopshooks.V1Alpha3+" (enabled: false)")
	c.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(formatNames(), cobra.ShellCompDirectiveNoFileComp))
	c.RegisterFlagCompletionFunc("ignition-version", cobra.FixedCompletions(ignition.Versions(), cobra.ShellCompDirectiveNoFileComp))
	c.RegisterFlagCompletionFunc("variant", cobra.FixedCompletions(butane.Variants(), cobra.ShellCompDirectiveNoFileComp))
	c.RegisterFlagCompletionFunc("butane-version", butaneVersionCompletion(&rf))
	c.RegisterFlagCompletionFunc("kops-api-version", cobra.FixedCompletions([]string{kopshooks.V1Alpha2, kopshooks.V1Alpha3}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

// prepare looks up the output format and checks its flags, and reads the
// configs of --merge, before the spec is read: a usage mistake writes
// nothing.
func (f *renderFlags) prepare(c *cobra.Command, format string, mergeFiles []string, sf *specFlags) (outputFormat, error) {
	i := slices.IndexFunc(outputFormats, func(f outputFormat) bool { return f.name == format })
	if i < 0 {
		return outputFormat{}, invalid("unknown --format %q: use %s", format, orList(formatNames()))
	}
	of := outputFormats[i]
	if c.Flags().Changed("mime") {
		// Say why, not only that --mime is for cloud-init: a
		// MIME envelope stops Ignition machines from booting.
		if err := cloudinit.CheckMIME(format); err != nil {
			return outputFormat{}, invalid("%v", err)
		}
	}
	if err := checkFormatFlags(c, of); err != nil {
		return outputFormat{}, err
	}
	if len(mergeFiles) > 0 {
		if err := render.CheckMerge(format); err != nil {
			return outputFormat{}, invalid("%v", err)
		}
		mfs, err := pipeline.ReadMerge(mergeFiles)
		if err != nil {
			return outputFormat{}, readFailed(c, err)
		}
		f.merge = mfs
		f.report = func(diags hooks.Diagnostics) error {
			return sf.verdict(c, strings.Join(mergeFiles, ", "), diags)
		}
	}
	if of.check != nil {
		if err := of.check(f); err != nil {
			return outputFormat{}, err
		}
	}
	return of, nil
}

// butaneVersionCompletion offers the versions of the variant given so far.
func butaneVersionCompletion(rf *renderFlags) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		variant := rf.variant
		if variant == "" {
			variant = butane.Variants()[0]
		}
		var vs []string
		for _, v := range butane.Versions() {
			if v.Variant == variant {
				vs = append(vs, v.Version+"\tIgnition "+v.IgnitionVersion)
			}
		}
		return vs, cobra.ShellCompDirectiveNoFileComp
	}
}
