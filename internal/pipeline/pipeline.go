// Package pipeline turns hostprov's inputs into what a node is to have: the
// spec sets, the storage (files, directories, links and accounts) and the
// diagnostics. It is the one place that tells a hostprov spec from kops
// manifests, names spec sets, finds a unit two specs make and a path two
// specs claim, and checks a hook's user and group against the node: every
// command that reads specs calls Load, and so do the Kubernetes agent and
// admission, with a HostHooks' hook spec as their input, so that a spec
// means the same wherever it is read.
//
// It also reads the inputs that are files: the specs (ReadSpecs), the
// configs to merge into an output (ReadMerge) and a config to import
// (ReadConfig), each only up to what a spec may have. What was given wrong
// is a *ReadError, which the caller words with how it was given: the CLI
// with its flags.
//
// Load prints nothing and writes nothing: the caller reports the
// diagnostics and picks the output (an Ignition config, a plan, a field
// error).
package pipeline

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hostprov/hostprov/internal/inputs"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// Input is one input of Load: a file (a hostprov spec, or a kops manifest,
// told apart by its apiVersion), or, when Object is set, the hook spec of a
// Kubernetes object.
type Input struct {
	inputs.File
	Object *Object
}

// Object says that an input is the hook spec document of a Kubernetes object
// (a HostHooks' v1alpha1.HostHooksSpec.HookSpec), named by the input's Name
// ("hosthooks/NAME"). Nobody wrote that document, so a line of it would tell
// nothing: its diagnostics are placed at the object, with the object's field
// as their path ("spec.hooks[1].exec"), and its units and storage at the
// object and the field ("hosthooks/NAME spec.hooks[1]"), which the state
// records.
type Object struct {
	// Set and Owner are the spec set's name and owner (apply.SpecSet).
	Set, Owner string
}

// Files are the inputs of files.
func Files(files []inputs.File) []Input {
	in := make([]Input, len(files))
	for i, f := range files {
		in[i] = Input{File: f}
	}
	return in
}

// Options shape what Load makes of its inputs.
type Options struct {
	// Dir is the directory the inputs are every *.yaml of (-d), or "":
	// it names them in the summary, and kops manifests are refused from
	// it, since each file of it is its own spec set.
	Dir string
	// Kops are the options of kops manifests; given for a hostprov spec,
	// they are a mistake.
	Kops KopsOptions
	// NoStorage, when set, says why the caller cannot make a spec's
	// files, directories, links and accounts: each of them is an error,
	// at its place, that says so.
	NoStorage string
	// SpecsOnly reads every input as a hostprov spec, looking for no
	// kops manifest and leaving an input's size to the parse (status -d,
	// which only names the spec sets).
	SpecsOnly bool
	// Node, when set, is the node the result is applied to: a hook's
	// user: or group: that no spec creates and the node lacks is a
	// warning, which only the node can tell.
	Node *apply.Options
}

// KopsOptions choose what Load renders of kops manifests.
type KopsOptions struct {
	// Role and InstanceGroup choose the instance group whose hooks to
	// render; Compat "kops" renders each hook as kops nodeup does; Runtime
	// is the container runtime of execContainer hooks (default: the
	// cluster's).
	Role, InstanceGroup, Compat, Runtime string
	// Given names the options above that the user gave ("--role"), in
	// the order to name them: for a hostprov spec the first is refused.
	Given []string
}

// Result is what Load made of the inputs.
type Result struct {
	// Units are the units of every spec set, in order.
	Units []compile.Unit
	// Sets are the spec sets: one per hostprov spec or object, or one
	// for kops manifests together, named after the first.
	Sets []apply.SpecSet
	// Storage is what the specs put on the machine besides units, in
	// order; an entry that another spec claimed first is left out.
	Storage compile.Storage
	// Disruptions are the disruptions the hooks of Sets declare, by unit.
	Disruptions map[string]Disruption
	// Kops is set when the inputs were kops manifests.
	Kops bool
	// Diagnostics are every problem found, unsorted; nothing may be
	// applied or written when they hold an error. Label names the inputs
	// in a summary of them ("a.yaml, b.yaml").
	Diagnostics hooks.Diagnostics
	Label       string
}

// Disruption is what a hook declares a change of it needs of the machine.
type Disruption struct {
	Hook string
	Kind string // hooks.DisruptionDrain or hooks.DisruptionReboot
}

// An InputError is a mistake in the inputs or options as a whole, which no
// diagnostic places: an option for kops manifests given with a hostprov
// spec, an unknown runtime. A command reports it as a usage error.
type InputError struct{ msg string }

func (e *InputError) Error() string { return e.msg }

func inputError(format string, args ...any) error {
	return &InputError{msg: fmt.Sprintf(format, args...)}
}

// Load runs the pipeline on the inputs. The caller reports the result's
// Diagnostics, and then, when they hold no error, returns err: an
// *InputError, or a failure to read the node (Options.Node). When err is
// set the result holds no more than the diagnostics to report before it.
func Load(in []Input, opts Options) (*Result, error) {
	if opts.SpecsOnly {
		return loadSets(in, opts)
	}
	isKops := false
	for _, i := range in {
		if i.Object != nil {
			continue
		}
		if len(i.Data) > hooks.MaxSize {
			// Read only up to one byte past the limit: refused before
			// anything parses it, a hostprov spec or kops manifests
			// (which would be cut short).
			_, diags := hooks.Parse(i.Name, i.Data)
			return &Result{Diagnostics: diags, Label: i.Name}, nil
		}
		isKops = isKops || kopsManifest(i.Data)
	}
	if !isKops {
		if len(opts.Kops.Given) > 0 && len(in) > 0 {
			return &Result{}, inputError("%s is for kops manifests, but %s is a hostprov spec", opts.Kops.Given[0], in[0].Name)
		}
		return loadSets(in, opts)
	}
	if opts.Dir != "" {
		return &Result{}, inputError("%s: -d reads hostprov specs, each its own spec set; give kops manifests with -f", opts.Dir)
	}
	r, err := loadKops(in, opts.Kops)
	if err == nil && !r.Diagnostics.HasErrors(false) {
		name := strings.TrimSuffix(filepath.Base(in[0].Name), filepath.Ext(in[0].Name))
		r.Sets = []apply.SpecSet{{Name: setName(name), Units: r.Units}}
	}
	return r, err
}

// setName is a spec set's name made from a file's: hooks.StdinName (-f -) is
// "stdin".
func setName(base string) string {
	if base == hooks.StdinName {
		return "stdin"
	}
	return base
}
