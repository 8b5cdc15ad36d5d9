package cli

import (
	"bytes"
	"fmt"
	"os"

	"github.com/rogpeppe/go-internal/diff"
	"github.com/spf13/cobra"

	"github.com/hostprov/hostprov/internal/fsutil"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render/kopshooks"
)

func newKops() *cobra.Command {
	c := &cobra.Command{
		Use:   "kops",
		Short: "Work with kops cluster specs",
		Long: `Commands for kops users. To render the hooks of kops manifests, give them to render:

  hostprov render -f cluster.yaml --instance-group nodes --format units
  hostprov render -f cluster.yaml --role Node --compat kops --format units`,
	}
	c.AddCommand(newKopsSetHooks())
	return c
}

func newKopsSetHooks() *cobra.Command {
	var (
		sf            specFlags
		cluster       string
		instanceGroup string
		showDiff      bool
	)
	c := &cobra.Command{
		Use:   "set-hooks -f hooks.yaml --cluster cluster.yaml [--instance-group NAME] [-d]",
		Short: "Write a hook spec's units into a kops Cluster or InstanceGroup manifest as raw hooks",
		Long: `set-hooks renders a hostprov spec and writes each unit into the hooks of the kops
Cluster (or, with --instance-group, of that InstanceGroup) in the manifest file, as a
hook with useRawManifest: true. The hooks it wrote before are replaced; every other
line, comment and key of the file stays as it is. The file is replaced atomically;
when --cluster names a link, the file it leads to is, and the link stays.

-d prints the change as a diff and writes nothing. For the hooks list alone, to
paste by hand, use hostprov render --format kops.`,
		Args: specArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if cluster == "" {
				return invalid("--cluster FILE is needed: the kops manifest to write the hooks into")
			}
			r, err := sf.load(c)
			if err != nil {
				return err
			}
			us := r.Units
			before, err := os.ReadFile(cluster)
			if err != nil {
				if os.IsNotExist(err) {
					return invalid("%s: no such file; --cluster names the kops manifest (kops get cluster -o yaml > cluster.yaml)", cluster)
				}
				return failure("%v", err)
			}
			after, err := kopshooks.Set(before, instanceGroup, us)
			if err != nil {
				// A hook kops cannot carry is the spec's problem, at
				// the hook; anything else is the manifest's.
				if e := sf.kopsRefusal(c, err); e != nil {
					return e
				}
				return invalid("%s: %v", cluster, err)
			}
			if showDiff {
				c.OutOrStdout().Write(diff.Diff(cluster, before, cluster, after))
				return nil
			}
			if bytes.Equal(before, after) {
				fmt.Fprintf(c.ErrOrStderr(), "hostprov: %s has these hooks already; nothing written\n", cluster)
				return nil
			}
			// Into the file the name leads to: a cluster.yaml that
			// links into a repository stays a link.
			if err := fsutil.WriteOutput(cluster, after, 0o644); err != nil {
				return failure("writing %s: %v", cluster, err)
			}
			fmt.Fprintf(c.ErrOrStderr(), "hostprov: wrote %s into %s\n", plural(countFiles(us), "hook"), cluster)
			return nil
		},
	}
	sf.noStorage = "a kops hook is a unit and nothing else: it cannot carry files, directories, links, users or groups"
	c.Flags().StringArrayVarP(&sf.files, "file", "f", []string{"hostprov.yaml"}, `hostprov hook spec to render ("-" for standard input)`)
	c.Flags().BoolVar(&sf.strict, "strict", false, "treat warnings as errors")
	c.Flags().StringVar(&cluster, "cluster", "", "kops manifest to write into (Cluster and InstanceGroup documents)")
	c.Flags().StringVar(&instanceGroup, "instance-group", "", "write into this InstanceGroup's hooks instead of the Cluster's")
	c.Flags().BoolVarP(&showDiff, "diff", "d", false, "print the change as a diff and write nothing")
	return c
}

// countFiles counts the units that become kops hooks: those with a file.
func countFiles(us []compile.Unit) int {
	n := 0
	for _, u := range us {
		if u.Contents != nil {
			n++
		}
	}
	return n
}
