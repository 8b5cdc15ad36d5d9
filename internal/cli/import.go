package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hostprov/hostprov/internal/fsutil"
	"github.com/hostprov/hostprov/internal/pipeline"
	"github.com/hostprov/hostprov/pkg/importer"
	"github.com/hostprov/hostprov/pkg/kops"
)

func newImport() *cobra.Command {
	var out, rest, instanceGroup, role string
	c := &cobra.Command{
		Use:   "import FILE [-o OUT] [--rest REST] [--instance-group NAME] [--role ROLE]",
		Short: "Turn a Butane, Ignition, cloud-config or kops config into a hook spec",
		Long: `import reads a Butane config, an Ignition config (spec 3.0.0 to 3.5.0), a cloud-config
(#cloud-config) or a kops Cluster or InstanceGroup manifest and writes the hook spec that
makes the same: units become raw hooks (useRawName, useRawManifest), drop-ins the drop-ins
of their unit's hook, masked units mask hooks; files, directories, links, users and groups
go onto one hook named after the spec. What the spec cannot say (disks, file systems,
RAID, kernel arguments, cloud-init modules other than write_files, users and groups,
fields of an entry hostprov has no equivalent of) is a warning with its file:line:col,
and goes to the leftovers: a config of the input's own kind (Ignition, Butane or
cloud-config) that render --merge takes back, so that rendering the spec with
--merge REST gives the input's config again. Of kops manifests, only hooks and
fileAssets are a spec's business; the rest is warned about and stays kops's.

Of kops manifests with several InstanceGroups, --instance-group (or --role, as for
render) says which machine's hooks to import: the group's own and the Cluster's.

FILE "-" reads standard input. The spec goes to standard output, or with -o OUT to OUT:
a file is replaced atomically (through a link, the file it leads to), a device or a pipe
(/dev/stdout) is written into. The leftovers go to --rest REST, or, with -o OUT and no
--rest, beside OUT as OUT's name with .rest.ign, .rest.bu or .rest.yaml for its
extension; without either, import says that they are written nowhere. With -o OUT, file
contents that are not UTF-8 text, which a spec's contents: cannot hold, are written
beside OUT as SET.files/PATH and named with local:; without -o they go to the leftovers. Warnings do not
change the exit status; an input that cannot be read is an error, and nothing is written.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			file := args[0]
			in := importer.Input{Name: file, InstanceGroup: instanceGroup}
			if role != "" {
				r, err := kops.ParseRole(role)
				if err != nil {
					return invalid("--role: %v", err)
				}
				in.Role = r
			}
			data, dir, err := pipeline.ReadConfig(file, c.InOrStdin())
			if err != nil {
				return readFailed(c, err)
			}
			in.Data, in.Dir = data, dir
			// A spec written to a file has a directory: contents it
			// cannot hold as text go beside it as local: files.
			in.Locals = out != "" && besideOutput(out, importer.FormatIgnition) != ""
			res, diags := importer.Import(in)
			printDiags(c.ErrOrStderr(), diags)
			if res == nil {
				return &exitError{code: ExitInvalid, msg: summary(displayName(file), diags, false)}
			}
			if res.Format == importer.FormatKops && rest != "" {
				return invalid("--rest: a kops manifest leaves nothing over: what is not hooks or fileAssets stays kops's, in the manifest")
			}
			if err := writeLocals(out, res.Locals); err != nil {
				return err
			}
			return writeImported(c, displayName(file), out, rest, res)
		},
	}
	c.Flags().StringVarP(&out, "out", "o", "", "write the spec to this file (atomically) instead of standard output")
	c.Flags().StringVar(&rest, "rest", "", "write the leftovers, what the spec cannot say, to this file as a config of the input's kind, for render --merge")
	c.Flags().StringVar(&instanceGroup, "instance-group", "", "of kops manifests: the InstanceGroup whose machine's hooks to import")
	c.Flags().StringVar(&role, "role", "", "of kops manifests: the role whose InstanceGroup's hooks to import")
	return c
}

// besideOutput is where the leftovers go when only -o OUT is given: OUT's
// name with its extension replaced by .rest and that of format, or ""
// when OUT is no regular file (a device or a pipe such as /dev/stdout).
func besideOutput(out, format string) string {
	if fi, err := os.Stat(out); err == nil && !fi.Mode().IsRegular() {
		return ""
	}
	ext := map[string]string{importer.FormatIgnition: ".ign", importer.FormatButane: ".bu", importer.FormatCloudConfig: ".yaml"}[format]
	return strings.TrimSuffix(out, filepath.Ext(out)) + ".rest" + ext
}

// writeLocals writes the local: files of an imported spec into the
// directory of out, where the spec goes, before the spec itself.
func writeLocals(out string, locals map[string][]byte) error {
	names := make([]string, 0, len(locals))
	for name := range locals {
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) > 0 {
		// Below the spec's directory only: a missing one is refused, as
		// for the spec itself.
		if fi, err := os.Stat(filepath.Dir(out)); err != nil || !fi.IsDir() {
			return failure("%s: the spec's directory %s is missing", out, filepath.Dir(out))
		}
	}
	for _, name := range names {
		p := filepath.Join(filepath.Dir(out), filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return failure("%v", err)
		}
		if err := fsutil.WriteOutput(p, locals[name], 0o644); err != nil {
			return failure("%v", err)
		}
	}
	return nil
}

// emptyRest is a config of the input's kind with nothing in it.
func emptyRest(res *importer.Result) []byte {
	switch res.Format {
	case importer.FormatIgnition, importer.FormatButane:
		return []byte(`{"ignition":{"version":"` + res.IgnitionVersion + `"}}` + "\n")
	case importer.FormatCloudConfig:
		return []byte("#cloud-config\n")
	}
	return nil
}

// writeImported writes the spec import made of the file called name: to
// out, or else standard output; and its leftovers to rest, or, when out is
// a file, beside it.
func writeImported(c *cobra.Command, name, out, rest string, res *importer.Result) error {
	restFile := rest
	if restFile == "" && out != "" && res.Rest != nil {
		restFile = besideOutput(out, res.RestFormat)
	}
	if res.Rest != nil && restFile == "" {
		fmt.Fprintf(c.ErrOrStderr(), "hostprov: %s: the leftovers (what the warnings send there) are written nowhere: give --rest FILE, then render with --merge FILE\n", name)
	}
	if out == "" {
		if _, err := c.OutOrStdout().Write(res.Spec); err != nil {
			return err
		}
	} else if err := fsutil.WriteOutput(out, res.Spec, 0o644); err != nil {
		return failure("%v", err)
	}
	if restFile == "" {
		return nil
	}
	data := res.Rest
	if data == nil {
		// Nothing left over: an empty config of the input's kind,
		// so that a --merge of it is what the user scripted.
		data = emptyRest(res)
	}
	if err := fsutil.WriteOutput(restFile, data, 0o644); err != nil {
		return failure("%v", err)
	}
	if rest == "" {
		fmt.Fprintf(c.ErrOrStderr(), "hostprov: %s: the leftovers are in %s; render the spec with --merge %s\n", name, restFile, restFile)
	}
	return nil
}
