package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/inputs"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/kops"
	"github.com/hostprov/hostprov/pkg/render"
	"github.com/hostprov/hostprov/pkg/render/kopshooks"
	"github.com/hostprov/hostprov/pkg/render/listing"
	"github.com/hostprov/hostprov/pkg/render/unitdir"
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

	// diagnosed is set once rendering printed a diagnostic.
	diagnosed bool
	// warnings counts the warnings verdict reported.
	warnings int
	// collect, when set, keeps the diagnostics in collected instead of
	// printing them (validate -o json).
	collect   bool
	collected hooks.Diagnostics
	// sets are the spec sets build made: one per hostprov spec, or one
	// for the kops manifests together.
	sets []apply.SpecSet
	// kops is set when build read kops manifests rather than a spec.
	kops bool
	// storage is what the specs put on the machine besides units: the
	// files, directories and links of every spec, in order.
	storage compile.Storage
	// disruptions are the disruptions the hooks of sets declare, by
	// unit.
	disruptions map[string]disruption
	// noStorage, when set, says why the command cannot do what a spec's
	// files, directories and links ask; build refuses each of them,
	// at its place, with it.
	noStorage string
	// node, when set, is the node plan or apply works on: build warns
	// about a hook's user: or group: that no spec creates and the node
	// lacks, which only the node can tell.
	node *apply.Options
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

// load reads the spec and runs the render pipeline, printing every
// diagnostic to stderr. It fails with ExitInvalid when the spec has errors
// (or warnings under --strict), so that nothing is written. A file whose
// apiVersion is kops's is read as kops manifests.
func (f *specFlags) load(c *cobra.Command) ([]compile.Unit, error) {
	in, err := f.read(c)
	if err != nil {
		return nil, err
	}
	return f.build(c, in)
}

// read reads the input files: those of -f, or every *.yaml of -d.
func (f *specFlags) read(c *cobra.Command) ([]inputs.File, error) {
	files := f.files
	if f.dir != "" {
		var err error
		if files, err = specDir(f.dir); err != nil {
			return nil, err
		}
	}
	var in []inputs.File
	for _, file := range files {
		name, data, err := readSpec(c, file)
		if err != nil {
			return nil, err
		}
		in = append(in, inputs.File{Name: name, Data: data})
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

// build runs the render pipeline on the inputs.
func (f *specFlags) build(c *cobra.Command, in []inputs.File) ([]compile.Unit, error) {
	renders.Add(1)
	isKops := false
	for _, i := range in {
		if len(i.Data) > hooks.MaxSize {
			// Read only up to one byte past the limit: refused before
			// anything parses it, a hostprov spec or kops manifests
			// (which would be cut short).
			_, diags := hooks.Parse(i.Name, i.Data)
			return nil, f.verdict(c, i.Name, diags)
		}
		isKops = isKops || kopsManifest(i.Data)
	}
	if !isKops {
		for _, flag := range []string{"role", "instance-group", "compat", "runtime"} {
			if f.kopsFlags && c.Flags().Changed(flag) && len(in) > 0 {
				return nil, invalid("--%s is for kops manifests, but %s is a hostprov spec", flag, in[0].Name)
			}
		}
		return f.buildSets(c, in)
	}
	if f.dir != "" {
		return nil, invalid("%s: -d reads hostprov specs, each its own spec set; give kops manifests with -f", f.dir)
	}
	f.kops = true
	us, err := f.buildKops(c, in)
	if err == nil {
		name := strings.TrimSuffix(filepath.Base(in[0].Name), filepath.Ext(in[0].Name))
		f.sets = []apply.SpecSet{{Name: setName(name), Units: us}}
	}
	return us, err
}

// buildSets renders each hostprov spec as its own spec set, named by its
// metadata.name or else after its file, and reports, at both hooks, a unit
// that two of them make and a name that two of them have.
func (f *specFlags) buildSets(c *cobra.Command, in []inputs.File) ([]compile.Unit, error) {
	var all []compile.Unit
	var diags hooks.Diagnostics
	var labels []string
	bySet := map[string]hooks.Position{} // set name -> where it is named
	byUnit := map[string]compile.Unit{}  // unit -> the first hook that makes it
	setOfUnit := map[string]string{}     // unit -> its set
	f.sets = nil
	f.disruptions = nil
	f.storage = compile.Storage{}
	claimed := map[string]hooks.Position{} // path -> the entry that claims it
	var specs []*hooks.Spec
	for _, i := range in {
		r, d := compile.BuildAll(i.Name, i.Data)
		spec, us := r.Spec, r.Units
		diags = append(diags, d...)
		diags = append(diags, f.addStorage(r.Storage, claimed)...)
		labels = append(labels, i.Name)
		if spec == nil {
			continue
		}
		name, where := spec.Name, spec.Where("metadata.name")
		if name == "" {
			name, where = setName(strings.TrimSuffix(filepath.Base(i.Name), filepath.Ext(i.Name))), hooks.Position{File: i.Name}
			if err := hooks.CheckSetName(name); err != nil {
				diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: hooks.Position{File: i.Name}, Message: fmt.Sprintf("the spec has no metadata.name, and its file's name does not make one: %v", err),
					Hint: "give the spec a name: metadata: {name: NAME}"})
				continue
			}
		}
		if d, reserved := agentSetName(name, where, spec.Name != ""); reserved {
			diags = append(diags, d)
			continue
		}
		if prev, dup := bySet[name]; dup {
			diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: where, Path: "metadata.name",
				Message: fmt.Sprintf("spec set %s is named already at %s: each spec of a node is its own set", name, prev),
				Hint:    "give one of them another metadata.name"})
			continue
		}
		bySet[name] = where
		for _, u := range us {
			if o, dup := byUnit[u.Name]; dup {
				diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: u.Pos, Path: fmt.Sprintf("hooks[%d]", u.Hook),
					Message: fmt.Sprintf("%s is made by spec set %s already, at %s: a unit belongs to one set", u.Name, setOfUnit[u.Name], o.Pos),
					Hint:    "remove the hook from one of the specs, or give it another name"})
				continue
			}
			byUnit[u.Name], setOfUnit[u.Name] = u, name
		}
		all = append(all, us...)
		var hookNames []string
		for _, h := range spec.Hooks {
			hookNames = append(hookNames, h.Name)
		}
		f.sets = append(f.sets, apply.SpecSet{Name: name, Units: us, Paths: apply.PathsOf(r.Storage, hookNames),
			Accounts: apply.AccountsOf(r.Storage, hookNames)})
		f.noteDisruptions(spec, us)
		specs = append(specs, spec)
	}
	if f.node != nil && !diags.HasErrors(false) {
		d, err := f.runAsWarnings(specs)
		if err != nil {
			return nil, err
		}
		diags = append(diags, d...)
	}
	label := strings.Join(labels, ", ")
	if f.dir != "" {
		label = f.dir
	}
	if len(in) == 0 {
		label = f.dir + " (no *.yaml file)"
	}
	return all, f.verdict(c, label, diags)
}

// addStorage adds a spec's storage to f.storage and reports what another
// spec claims already, and, when the command cannot write storage, every
// entry.
func (f *specFlags) addStorage(st compile.Storage, claimed map[string]hooks.Position) hooks.Diagnostics {
	var diags hooks.Diagnostics
	check := func(kind, p string, pos hooks.Position) bool {
		if f.noStorage != "" {
			diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: pos,
				Message: fmt.Sprintf("%s %s: %s", kind, p, f.noStorage),
				Hint:    "render the spec into user data with --format ignition, butane or cloud-init, which carry files, directories and links"})
			return false
		}
		if first, dup := claimed[p]; dup && first.File != pos.File {
			diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: pos,
				Message: fmt.Sprintf("%s is claimed already by another spec, at %s", p, first),
				Hint:    "there can be only one thing at a path: keep it in one of the specs"})
			return false
		}
		claimed[p] = pos
		return true
	}
	for _, x := range st.Files {
		if check("file", x.Path, x.Pos) {
			f.storage.Files = append(f.storage.Files, x)
		}
	}
	for _, x := range st.Directories {
		if check("directory", x.Path, x.Pos) {
			f.storage.Directories = append(f.storage.Directories, x)
		}
	}
	for _, x := range st.Links {
		if check("link", x.Path, x.Pos) {
			f.storage.Links = append(f.storage.Links, x)
		}
	}
	if f.noStorage != "" {
		for _, x := range st.Groups {
			check("group", x.Name, x.Pos)
		}
		for _, x := range st.Users {
			check("user", x.Name, x.Pos)
		}
		return diags
	}
	return append(diags, f.storage.AddAccounts(st)...)
}

// runAsWarnings warns about each hook's user: and group: that no spec of
// the apply creates and the node lacks: systemd would refuse to start the
// unit (status 217/USER or 216/GROUP). It is a warning, not an error, and
// only at plan and apply time: the image of a node may make the account,
// and a render cannot know the machine it is for.
func (f *specFlags) runAsWarnings(specs []*hooks.Spec) (hooks.Diagnostics, error) {
	var has func(apply.AccountKind, string) bool // the node's accounts, read once a hook names one
	created := map[string]bool{}
	for _, u := range f.storage.Users {
		created["user "+u.Name], created["group "+u.Name] = true, true
	}
	for _, g := range f.storage.Groups {
		created["group "+g.Name] = true
	}
	var diags hooks.Diagnostics
	for _, spec := range specs {
		for i, h := range spec.Hooks {
			for _, x := range []struct {
				kind apply.AccountKind
				name string
				key  string
			}{{apply.KindUser, h.User, "user"}, {apply.KindGroup, h.Group, "group"}} {
				if x.name == "" || strings.ContainsAny(x.name, "%$") || allDigits(x.name) || created[string(x.kind)+" "+x.name] {
					continue
				}
				if has == nil {
					var err error
					if has, err = apply.NodeHas(*f.node); err != nil {
						return nil, failure("%v", err)
					}
				}
				if has(x.kind, x.name) {
					continue
				}
				path := fmt.Sprintf("hooks[%d].%s", i, x.key)
				diags = append(diags, hooks.Diagnostic{Severity: hooks.Warning, Pos: spec.Where(path), Path: path,
					Message: fmt.Sprintf("%s %s is not on this node, and no spec creates it: systemd will not start the unit", x.kind, x.name),
					Hint:    fmt.Sprintf("add it to the hook: %ss: [{name: %s}], or create it on the node first", x.kind, x.name)})
			}
		}
	}
	return diags, nil
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
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

// setName is a spec set's name made from a file's: "<stdin>" (-f -) is
// "stdin".
func setName(base string) string {
	if base == "<stdin>" {
		return "stdin"
	}
	return base
}

// agentSetName refuses a node's own spec set whose name the agent's sets
// have (hooks.AgentSetPrefix): the agent would take it for one of its own
// and prune it. named tells whether the name is the spec's metadata.name
// or its file's.
func agentSetName(name string, where hooks.Position, named bool) (hooks.Diagnostic, bool) {
	if !strings.HasPrefix(name, hooks.AgentSetPrefix) {
		return hooks.Diagnostic{}, false
	}
	d := hooks.Diagnostic{Severity: hooks.Error, Pos: where,
		Message: fmt.Sprintf("spec set %s: names that start with %q are the sets hostprov's agent applies for HostHooks, which it prunes when their HostHooks is gone", name, hooks.AgentSetPrefix),
		Hint:    "give the spec a metadata.name that does not start with " + hooks.AgentSetPrefix}
	if named {
		d.Path = "metadata.name"
	} else {
		d.Hint = "rename the file, or give the spec a metadata.name that does not start with " + hooks.AgentSetPrefix
	}
	return d, true
}

// specDir lists the specs of a directory (-d): its *.yaml files, in
// lexical order; hidden files (an editor's, a package manager's) are none.
func specDir(dir string) ([]string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, failure("%v", err)
	}
	ents, err := os.ReadDir(abs)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, invalid("%s: no such directory; give the directory of hook specs with -d DIR", dir)
		}
		return nil, failure("%v", err)
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

// buildKops renders the hooks of kops manifests.
func (f *specFlags) buildKops(c *cobra.Command, in []inputs.File) ([]compile.Unit, error) {

	var ms []*kops.Manifests
	var diags hooks.Diagnostics
	var names []string
	for _, i := range in {
		m, d := kops.Read(i.Name, i.Data)
		ms = append(ms, m)
		diags = append(diags, d...)
		names = append(names, i.Name)
	}
	label := strings.Join(names, ", ")
	var role kops.Role
	if f.role != "" {
		r, err := kops.ParseRole(f.role)
		if err != nil {
			return nil, invalid("--role: %v", err)
		}
		role = r
	}
	m, d := kops.Merge(ms...)
	diags = append(diags, d...)
	// Every problem at once: when the manifests have errors, or which
	// machine's hooks to render is not settled, the hooks of every
	// document are still checked, so the next run is not a new round.
	refuse := func() error {
		rt, err := f.kopsRuntime(m)
		if err != nil {
			rt = kops.Containerd
		}
		diags = append(diags, kops.CheckAll(m, rt, diags)...)
		return f.verdict(c, label, diags)
	}
	hs, d := m.Hooks(role, f.instanceGroup)
	diags = append(diags, d...)
	if diags.HasErrors(false) {
		return nil, refuse()
	}
	rt, err := f.kopsRuntime(m)
	if err != nil {
		return nil, err
	}
	switch f.compat {
	case "":
		us, d := kops.Render(hs, rt)
		diags = append(diags, d...)
		return us, f.verdict(c, label, diags)
	case "kops":
		if err := f.verdict(c, label, diags); err != nil {
			return nil, err
		}
		tasks, err := kops.RenderCompat(hs, rt)
		if err != nil {
			return nil, invalid("%v", err)
		}
		us := make([]compile.Unit, len(tasks))
		for i, t := range tasks {
			us[i] = t.Unit
			if us[i].HookName == "" {
				us[i].HookName = hs[t.Hook].Name
			}
		}
		return us, nil
	}
	return nil, invalid(`unknown --compat %q: the only compatibility mode is "kops"`, f.compat)
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
	names := make([]string, len(f.files))
	for i, file := range f.files {
		names[i] = displayName(file)
	}
	return f.verdict(c, strings.Join(names, ", "), ke.Diagnostics())
}

// kopsRuntime is the container runtime execContainer hooks run with: the
// flag's, else the cluster's (kops defaults to containerd).
func (f *specFlags) kopsRuntime(m *kops.Manifests) (kops.Runtime, error) {
	rt := f.runtime
	if rt == "" && m.Cluster != nil {
		rt = m.Cluster.ContainerRuntime
	}
	switch kops.Runtime(rt) {
	case "", kops.Containerd:
		return kops.Containerd, nil
	case kops.Docker:
		return kops.Docker, nil
	}
	return "", invalid("unknown container runtime %q: use containerd or docker", rt)
}

// kopsManifest reports whether data's first YAML document has a kops
// apiVersion. Anything it cannot tell is left to the hostprov spec parser,
// whose diagnostics say what is wrong.
//
// It answers as kopsHead does on every input, but a hostprov spec, which
// opens with its apiVersion, costs it a look at the first lines instead of
// a second parse of the whole spec (a fifth of a render of 10,000 hooks).
func kopsManifest(data []byte) bool {
	return !hostprovHead(data) && kopsHead(data)
}

// hostprovHead reports whether data opens, after blank lines, comment
// lines and at most one "---" line, with a line "apiVersion: V" where V
// starts with a letter or digit other than "k". That line is then the
// first key of the first document's root mapping, and its value a plain
// scalar that cannot start with "kops", so kopsHead is false: yaml.v3
// decodes that value into apiVersion, or fails on the document (another
// key decoding to apiVersion is an error too, and a merged apiVersion
// loses to an explicit one). It is false whenever it cannot be sure of
// that, and kopsHead decides.
func hostprovHead(data []byte) bool {
	marker := false
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if v, ok := bytes.CutPrefix(line, []byte("apiVersion: ")); ok {
			return len(v) > 0 && v[0] != 'k' &&
				('a' <= v[0] && v[0] <= 'z' || 'A' <= v[0] && v[0] <= 'Z' || '0' <= v[0] && v[0] <= '9')
		}
		// Only plain ASCII before it: YAML breaks lines at \r, U+0085,
		// U+2028 and U+2029 too, which would end a comment early.
		for _, c := range line {
			if c < ' ' && c != '\t' || c > '~' {
				return false
			}
		}
		switch t := bytes.TrimLeft(line, " \t"); {
		case len(t) == 0 || t[0] == '#':
		case string(line) == "---" && !marker:
			marker = true
		default:
			return false
		}
	}
	return false
}

// kopsHead is kopsManifest by a parse of data's first document.
func kopsHead(data []byte) bool {
	var head struct {
		APIVersion string `yaml:"apiVersion"`
	}
	if yaml.NewDecoder(bytes.NewReader(data)).Decode(&head) != nil {
		return false
	}
	return strings.HasPrefix(head.APIVersion, "kops.k8s.io/") || strings.HasPrefix(head.APIVersion, "kops/")
}

func readSpec(c *cobra.Command, file string) (string, []byte, error) {
	// Read at most one byte more than a spec may have, so that an
	// endless or huge input is refused (by hooks.Parse, with a position)
	// without being read whole.
	if file == "-" {
		data, err := io.ReadAll(io.LimitReader(c.InOrStdin(), hooks.MaxSize+1))
		if err != nil {
			return "", nil, failure("reading standard input: %v", err)
		}
		return "<stdin>", data, nil
	}
	f, err := os.Open(file)
	if err != nil {
		if os.IsNotExist(err) {
			return "", nil, invalid("%s: no such file; give the hook spec with -f FILE (or -f - for standard input)", file)
		}
		return "", nil, failure("%v", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		if c.Flags().Lookup("dir") != nil {
			return "", nil, invalid("%s is a directory: -f reads one spec file; read every *.yaml file of a directory with -d %s", file, file)
		}
		return "", nil, invalid("%s is a directory: -f reads one spec file", file)
	}
	data, err := readAtMost(f)
	if err != nil {
		return "", nil, failure("reading %s: %v", file, err)
	}
	return file, data, nil
}

// readAtMost reads f, at most one byte more than a spec may have, so that
// a huge input is refused (by hooks.Parse, with a position) without being
// read whole. A regular file's size sizes the buffer once, as os.ReadFile
// does: growing it by doubling cleared and copied a large spec's bytes
// some 20 times (4% of a 10,000-hook render).
func readAtMost(f *os.File) ([]byte, error) {
	size := 512
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
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

// readMerge reads a --merge file, at most as much as a spec may have.
func readMerge(name string) (render.MergeFile, error) {
	f, err := os.Open(name)
	if err != nil {
		if os.IsNotExist(err) {
			return render.MergeFile{}, invalid("--merge %s: no such file", name)
		}
		return render.MergeFile{}, failure("%v", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return render.MergeFile{}, invalid("--merge %s is a directory: give one config file, and --merge again for each other", name)
	}
	data, err := readAtMost(f)
	if err != nil {
		return render.MergeFile{}, failure("reading %s: %v", name, err)
	}
	if len(data) > hooks.MaxSize {
		return render.MergeFile{}, invalid("--merge %s: larger than %d bytes", name, hooks.MaxSize)
	}
	dir, err := filepath.Abs(filepath.Dir(name))
	if err != nil {
		return render.MergeFile{}, failure("%v", err)
	}
	return render.MergeFile{Name: name, Data: data, Dir: dir}, nil
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

// renderFlags are the flags of render that only some formats take.
type renderFlags struct {
	out             string
	pretty          bool
	ignitionVersion string
	variant         string
	butaneVersion   string
	mime            bool
	kopsAPIVersion  string
	// storage is the specs' files, directories and links (specFlags.storage).
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
		help:  "an Ignition config (--ignition-version, default " + render.DefaultIgnitionVersion + "; --pretty indents it) on standard output",
		flags: []string{"ignition-version", "pretty"},
		check: func(f *renderFlags) error {
			_, err := f.ignitionOptions().Resolve()
			return optionError(err)
		},
		write: func(w io.Writer, f *renderFlags, us []compile.Unit) error {
			b, err := render.Ignition(us, f.ignitionOptions())
			if err != nil {
				if storageRefused(err) {
					return err
				}
				return failure("building the Ignition config: %v", err)
			}
			if len(f.merge) > 0 {
				return f.merged(w, "the Ignition config", func() ([]byte, hooks.Diagnostics, error) {
					return render.MergeIgnitionConfig(b, us, f.ignitionOptions(), f.merge)
				})
			}
			return write(w, b)
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
			b, err := render.Butane(us, f.butaneOptions())
			if err != nil {
				if storageRefused(err) {
					return err
				}
				return failure("building the Butane config: %v", err)
			}
			if len(f.merge) > 0 {
				return f.merged(w, "the Butane config", func() ([]byte, hooks.Diagnostics, error) {
					return render.MergeButaneConfig(b, us, f.butaneOptions(), f.merge)
				})
			}
			return write(w, b)
		},
	},
	{
		name:  "cloud-init",
		help:  "a #cloud-config document (--mime wraps it in a MIME message) on standard output",
		flags: []string{"mime"},
		write: func(w io.Writer, f *renderFlags, us []compile.Unit) error {
			if len(f.merge) > 0 {
				// Merged into the document, then wrapped.
				b, err := render.CloudInit(us, render.CloudInitOptions{Storage: f.storage})
				if err != nil {
					if storageRefused(err) {
						return err
					}
					return failure("building the cloud-config: %v", err)
				}
				return f.merged(w, "the cloud-config", func() ([]byte, hooks.Diagnostics, error) {
					return render.MergeCloudInitConfig(b, us, render.CloudInitOptions{MIME: f.mime, Storage: f.storage}, f.merge)
				})
			}
			b, err := render.CloudInit(us, render.CloudInitOptions{MIME: f.mime, Storage: f.storage})
			if err != nil {
				if storageRefused(err) {
					return err
				}
				return failure("building the cloud-config: %v", err)
			}
			return write(w, b)
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

// merged writes the output merge makes of hostprov's output and the
// --merge files, after their diagnostics; nothing when one is an error.
func (f *renderFlags) merged(w io.Writer, what string, merge func() ([]byte, hooks.Diagnostics, error)) error {
	b, diags, err := merge()
	if err != nil {
		return failure("merging into %s: %v", what, err)
	}
	if err := f.report(diags); err != nil {
		return err
	}
	return write(w, b)
}

func (f *renderFlags) ignitionOptions() render.IgnitionOptions {
	return render.IgnitionOptions{Version: f.ignitionVersion, Pretty: f.pretty, Storage: f.storage}
}

func (f *renderFlags) butaneOptions() render.ButaneOptions {
	return render.ButaneOptions{Variant: f.variant, Version: f.butaneVersion, IgnitionVersion: f.ignitionVersion, Storage: f.storage}
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
	var butane strings.Builder
	for _, v := range render.ButaneVersions() {
		fmt.Fprintf(&butane, "  %-8s %s -> Ignition %s\n", v.Variant, v.Version, v.IgnitionVersion)
	}
	c := &cobra.Command{
		Use:   "render [-f FILE]... | -d DIR [--format " + strings.Join(formatNames(), "|") + "] [--out DIR]",
		Short: "Render a hook spec to instance user data, a unit listing or a unit directory",
		Long: `Render reads a hook spec, checks it, and writes its units:

` + help.String() + `
Ignition spec versions: ` + strings.Join(render.IgnitionVersions(), ", ") + `.
Butane versions and the Ignition version each translates to (the default is
the one for Ignition ` + render.DefaultIgnitionVersion + `; --ignition-version picks the newest that
translates to it):

` + butane.String() + `
Nothing is written when the spec has an error.`,
		Args: specArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			i := slices.IndexFunc(outputFormats, func(f outputFormat) bool { return f.name == format })
			if i < 0 {
				return invalid("unknown --format %q: use %s", format, orList(formatNames()))
			}
			of := outputFormats[i]
			if c.Flags().Changed("mime") {
				// Say why, not only that --mime is for cloud-init: a
				// MIME envelope stops Ignition machines from booting.
				if err := render.CheckMIME(format); err != nil {
					return invalid("%v", err)
				}
			}
			if err := checkFormatFlags(c, of); err != nil {
				return err
			}
			if len(mergeFiles) > 0 {
				if err := render.CheckMerge(format); err != nil {
					return invalid("%v", err)
				}
				for _, name := range mergeFiles {
					mf, err := readMerge(name)
					if err != nil {
						return err
					}
					rf.merge = append(rf.merge, mf)
				}
				rf.report = func(diags hooks.Diagnostics) error {
					return sf.verdict(c, strings.Join(mergeFiles, ", "), diags)
				}
			}
			if of.check != nil {
				if err := of.check(&rf); err != nil {
					return err
				}
			}
			us, err := sf.load(c)
			if err != nil {
				return err
			}
			if sf.kops && !c.Flags().Changed("format") {
				// A kops user may expect hooks or units from a cluster
				// spec; the default output is user data. Say so, on
				// stderr, so that the output itself stays as asked.
				fmt.Fprintf(c.ErrOrStderr(), "hostprov: %s: kops manifests: rendering their hooks as %s, the default --format; --format kops gives hooks for a cluster spec, units a listing of the units\n",
					strings.Join(sf.files, ", "), format)
			}
			rf.storage = sf.storage
			return sf.outputVerdict(c, of.write(c.OutOrStdout(), &rf, us))
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
		"Ignition spec version, for --format ignition (default "+render.DefaultIgnitionVersion+") and butane: "+strings.Join(render.IgnitionVersions(), ", "))
	c.Flags().StringVar(&rf.variant, "variant", "", "Butane variant, for --format butane: "+orList(render.ButaneVariants())+" (default "+render.ButaneVariants()[0]+")")
	c.Flags().StringVar(&rf.butaneVersion, "butane-version", "", "Butane spec version, for --format butane (default: the one for the Ignition version)")
	c.Flags().BoolVar(&rf.mime, "mime", false, "wrap the cloud-config in a multipart MIME message, for --format cloud-init")
	c.Flags().StringVar(&rf.kopsAPIVersion, "kops-api-version", "", "kops API version of the hooks, for --format kops: "+kopshooks.V1Alpha2+" (disabled: true, the default) or "+kopshooks.V1Alpha3+" (enabled: false)")
	c.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(formatNames(), cobra.ShellCompDirectiveNoFileComp))
	c.RegisterFlagCompletionFunc("ignition-version", cobra.FixedCompletions(render.IgnitionVersions(), cobra.ShellCompDirectiveNoFileComp))
	c.RegisterFlagCompletionFunc("variant", cobra.FixedCompletions(render.ButaneVariants(), cobra.ShellCompDirectiveNoFileComp))
	c.RegisterFlagCompletionFunc("butane-version", butaneVersionCompletion(&rf))
	c.RegisterFlagCompletionFunc("kops-api-version", cobra.FixedCompletions([]string{kopshooks.V1Alpha2, kopshooks.V1Alpha3}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

// butaneVersionCompletion offers the versions of the variant given so far.
func butaneVersionCompletion(rf *renderFlags) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		variant := rf.variant
		if variant == "" {
			variant = render.ButaneVariants()[0]
		}
		var vs []string
		for _, v := range render.ButaneVersions() {
			if v.Variant == variant {
				vs = append(vs, v.Version+"\tIgnition "+v.IgnitionVersion)
			}
		}
		return vs, cobra.ShellCompDirectiveNoFileComp
	}
}

func displayName(file string) string {
	if file == "-" {
		return "<stdin>"
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
