package cli

// The flags of the commands that read hook specs, and the report of what
// the pipeline found: every diagnostic, and the verdict that says whether
// anything may be written.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/spf13/cobra"

	"github.com/hostprov/hostprov/internal/inputs"
	"github.com/hostprov/hostprov/internal/pipeline"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/kops"
	"github.com/hostprov/hostprov/pkg/render/kopshooks"
)

// specFlags are the flags of every command that reads a hook spec: a
// hostprov spec, or kops Cluster and InstanceGroup manifests whose hooks
// are rendered instead.
type specFlags struct {
	files  []string
	dir    string // -d: every *.yaml of it, each a spec set
	strict bool
	// kops manifests only.
	role          string
	instanceGroup string
	compat        string
	runtime       string
	// kopsFlags is set when the command has the kops-only flags above
	// (register adds them). A command that reads a spec but gives a flag
	// of the same name its own meaning (kops set-hooks --instance-group)
	// does not, and its flag is none of build's business.
	kopsFlags bool
	// noStorage, when set, says why the command cannot do what a spec's
	// files, directories and links ask (pipeline.Options.NoStorage).
	noStorage string

	// diagnosed is set once a verdict printed a diagnostic.
	diagnosed bool
	// warnings counts the warnings verdict reported.
	warnings int
	// collect, when set, keeps the diagnostics in collected instead of
	// printing them (validate -o json).
	collect   bool
	collected hooks.Diagnostics
}

func (f *specFlags) register(c *cobra.Command) {
	f.kopsFlags = true
	c.Flags().StringArrayVarP(&f.files, "file", "f", []string{"hostprov.yaml"},
		`hook spec to read ("-" for standard input); repeat it for several specs, each its own spec set, or for kops manifests (-f cluster.yaml -f ig.yaml)`)
	c.Flags().StringVarP(&f.dir, "dir", "d", "",
		"read every *.yaml file of this directory, in lexical order, each its own spec set (as /etc/hostprov/hooks.d)")
	c.MarkFlagsMutuallyExclusive("file", "dir")
	c.Flags().BoolVar(&f.strict, "strict", false, "treat warnings as errors")
	c.Flags().StringVar(&f.role, "role", "", "kops manifests: render the hooks of this instance group role (Node, ControlPlane, APIServer, Bastion; Master is ControlPlane)")
	c.Flags().StringVar(&f.instanceGroup, "instance-group", "", "kops manifests: render for this instance group (needed when the files hold several)")
	c.Flags().StringVar(&f.compat, "compat", "", `kops manifests: "kops" renders each hook byte for byte as kops nodeup does`)
	c.Flags().StringVar(&f.runtime, "runtime", "", "kops manifests: container runtime of execContainer hooks, containerd or docker (default: the cluster's)")
	c.RegisterFlagCompletionFunc("role", cobra.FixedCompletions([]string{"Node", "ControlPlane", "APIServer", "Bastion"}, cobra.ShellCompDirectiveNoFileComp))
	c.RegisterFlagCompletionFunc("compat", cobra.FixedCompletions([]string{"kops"}, cobra.ShellCompDirectiveNoFileComp))
	c.RegisterFlagCompletionFunc("runtime", cobra.FixedCompletions([]string{string(kops.Containerd), string(kops.Docker)}, cobra.ShellCompDirectiveNoFileComp))
}

// load reads the spec and runs the pipeline on it, printing every
// diagnostic to stderr. It fails with ExitInvalid when the spec has errors
// (or warnings under --strict), so that nothing is written.
func (f *specFlags) load(c *cobra.Command) (*pipeline.Result, error) {
	in, err := f.read(c)
	if err != nil {
		return nil, err
	}
	return f.build(c, in, nil)
}

// read reads the input files: those of -f, or every *.yaml of -d.
func (f *specFlags) read(c *cobra.Command) ([]inputs.File, error) {
	in, err := pipeline.ReadSpecs(pipeline.Specs{Files: f.files, Dir: f.dir, Stdin: c.InOrStdin()})
	if err != nil {
		return nil, readFailed(c, err)
	}
	return in, nil
}

// fingerprint is the inputs' fingerprint (see apply.Options.Inputs): the
// files, the flags that shape rendering, and this build.
func (f *specFlags) fingerprint(in []inputs.File) string {
	return inputs.Fingerprint([]string{"--role=" + f.role, "--instance-group=" + f.instanceGroup,
		"--compat=" + f.compat, "--runtime=" + f.runtime}, in...)
}

// renders counts builds, for the test that a re-apply of the inputs of the
// last apply renders nothing.
var renders atomic.Int64

// build runs the pipeline on the inputs and reports what it found. node,
// when set, is the node plan or apply works on (pipeline.Options.Node).
func (f *specFlags) build(c *cobra.Command, in []inputs.File, node *apply.Options) (*pipeline.Result, error) {
	renders.Add(1)
	opts := pipeline.Options{Dir: f.dir, NoStorage: f.noStorage, Node: node, Kops: pipeline.KopsOptions{
		Role: f.role, InstanceGroup: f.instanceGroup, Compat: f.compat, Runtime: f.runtime}}
	for _, flag := range []string{"role", "instance-group", "compat", "runtime"} {
		if f.kopsFlags && c.Flags().Changed(flag) {
			opts.Kops.Given = append(opts.Kops.Given, "--"+flag)
		}
	}
	r, err := pipeline.Load(pipeline.Files(in), opts)
	return f.report(c, r, err)
}

// report reports what pipeline.Load found: its diagnostics, with their
// verdict, and then its error, a usage error for a mistake in the inputs,
// else a failure.
func (f *specFlags) report(c *cobra.Command, r *pipeline.Result, err error) (*pipeline.Result, error) {
	if verr := f.verdict(c, r.Label, r.Diagnostics); verr != nil {
		return nil, verr
	}
	var ie *pipeline.InputError
	switch {
	case errors.As(err, &ie):
		return nil, invalid("%v", err)
	case err != nil:
		return nil, failure("%v", err)
	}
	return r, nil
}

// specDir is the absolute directory of -d, or "".
func (f *specFlags) specDir() string {
	if f.dir == "" {
		return ""
	}
	abs, err := filepath.Abs(f.dir)
	if err != nil {
		return f.dir
	}
	return abs
}

// verdict prints the diagnostics and turns errors (or, with --strict,
// warnings) into the exit error that says nothing was written.
func (f *specFlags) verdict(c *cobra.Command, label string, diags hooks.Diagnostics) error {
	f.diagnosed = f.diagnosed || len(diags) > 0
	diags.Sort()
	for _, d := range diags {
		if d.Severity != hooks.Error {
			f.warnings++
		}
	}
	if f.collect {
		f.collected = append(f.collected, diags...)
	} else {
		printDiags(c.ErrOrStderr(), diags)
	}
	if diags.HasErrors(f.strict) {
		return &exitError{code: ExitInvalid, msg: summary(label, diags, f.strict)}
	}
	return nil
}

// outputVerdict reports what an output refused of the spec (units kops
// cannot carry, files or directories it cannot make) as the spec's own
// problems, at their places; any other error of the output is returned
// as it is.
func (f *specFlags) outputVerdict(c *cobra.Command, err error) error {
	if e := f.kopsRefusal(c, err); e != nil {
		return e
	}
	if storageRefused(err) {
		var ds hooks.Diagnostics
		errors.As(err, &ds)
		return f.verdict(c, strings.Join(f.files, ", "), ds)
	}
	return err
}

// kopsRefusal reports the units kops cannot carry (a *kopshooks.Error in
// err) as errors at their hooks in the spec, like the spec's own problems,
// and returns the exit error that says nothing was written. It returns nil
// for any other error.
func (f *specFlags) kopsRefusal(c *cobra.Command, err error) error {
	var ke *kopshooks.Error
	if !errors.As(err, &ke) {
		return nil
	}
	return f.verdict(c, f.fileNames(), ke.Diagnostics())
}

// fileNames names the files of -f, as a summary names them.
func (f *specFlags) fileNames() string {
	names := make([]string, len(f.files))
	for i, file := range f.files {
		names[i] = displayName(file)
	}
	return strings.Join(names, ", ")
}

func printDiags(w io.Writer, diags hooks.Diagnostics) {
	for _, d := range diags {
		fmt.Fprintln(w, d.String())
	}
}

// summary says why nothing was written, as the last line of the output.
func summary(file string, diags hooks.Diagnostics, strict bool) string {
	var errs, warns int
	for _, d := range diags {
		if d.Severity == hooks.Error {
			errs++
		} else {
			warns++
		}
	}
	s := fmt.Sprintf("%s: %s", file, plural(errs, "error"))
	if warns > 0 {
		s += ", " + plural(warns, "warning")
		if strict {
			s += " (fatal under --strict)"
		}
	}
	return s + "; nothing written"
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func displayName(file string) string {
	if file == "-" {
		return hooks.StdinName
	}
	return file
}

// specArgs is the Args of the commands that read specs with -f or -d and
// take no arguments: a spec given as an argument, as other tools take it,
// is a usage mistake that says which flag to use.
func specArgs(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	a := args[0]
	usage := func(format string, v ...any) error {
		return &exitError{code: ExitInvalid, cmd: c.CommandPath(), msg: fmt.Sprintf(format, v...)}
	}
	fi, err := os.Stat(a)
	switch {
	case err == nil && fi.IsDir() && c.Flags().Lookup("dir") != nil:
		return usage("%s is a directory: use -d %s", a, a)
	case err == nil && fi.IsDir():
		return usage("%s is a directory, and %s takes no arguments: give the hook spec with -f FILE", a, c.Name())
	case err == nil || a == "-":
		return usage("%s is a file: use -f %s", a, a)
	}
	return usage("unexpected argument %q: %s takes no arguments; give the hook spec with -f FILE", a, c.Name())
}
