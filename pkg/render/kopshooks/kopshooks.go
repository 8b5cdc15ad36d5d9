package kopshooks

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/yamlnode"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/render/internal/unitfiles"
	"github.com/hostprov/hostprov/pkg/render/internal/yamlwrite"
)

// Options are the choices of the kops output.
type Options struct {
	// APIVersion is the kops API version of the manifest the hooks are
	// pasted into: "v1alpha2" (the default, and what `kops get -o yaml`
	// and `kops edit` show) or "v1alpha3". It decides how a disabled hook
	// is spelled: v1alpha2 says `disabled: true`, v1alpha3 `enabled: false`,
	// and each version refuses the other's field.
	APIVersion string
	// Storage is refused: a kops hook cannot carry files, directories or
	// links. Kops returns a *Error with each entry at its place.
	Storage compile.Storage
}

// Kops API versions.
const (
	V1Alpha2 = "v1alpha2"
	V1Alpha3 = "v1alpha3"
)

// The reasons a unit cannot be a kops hook. Kops returns a *Error that
// wraps one of these for every such unit, so that callers and tests can ask
// errors.Is.
var (
	// ErrMask: kops has no way to mask a unit.
	ErrMask = errors.New("kops cannot mask a unit: a hook either writes a unit that nodeup enables and starts, or stops and disables one")
	// ErrDropin: kops has no drop-ins. nodeup writes a hook to
	// <unit dir>/NAME and appends ".service" to a NAME that does not end in a
	// unit type, so a hook named "docker.service.d/10-proxy.conf" becomes
	// the file 10-proxy.conf.service, which systemd ignores, and nodeup's
	// `systemctl restart` of that name fails.
	ErrDropin = errors.New("kops cannot write drop-ins: nodeup writes each hook as a unit named after the hook and appends .service to a name like NAME.d/FILE.conf, which systemd then ignores")
	// ErrDisabledUnit: a kops hook with enabled: false (disabled: true)
	// only stops and disables a unit, and nodeup ignores its manifest.
	ErrDisabledUnit = errors.New("kops cannot install a unit without enabling and starting it: nodeup ignores the manifest of a disabled hook and only stops and disables the unit, and enables and restarts the unit of every other hook")
	// ErrTemplate: nodeup restarts every hook's unit by its name, and
	// a template cannot be started without an instance.
	ErrTemplate = errors.New("kops cannot install a template unit: nodeup runs systemctl restart on every hook's unit name, and a template cannot be started without an instance, so nodeup would fail")
	// ErrDeviceTimeout: a hook's deviceTimeout is a drop-in for the
	// device unit of its mount or swap, which kops cannot write (see
	// ErrDropin).
	ErrDeviceTimeout = errors.New("kops cannot carry deviceTimeout: it is a drop-in for the device's unit, and a kops hook cannot write drop-ins")
	// ErrExisting: a kops hook without a manifest is refused by kops.
	ErrExisting = errors.New("kops cannot enable a unit it does not write: kops refuses a hook without manifest or execContainer")
)

// Error lists every unit that a kops hook cannot express, each with
// its reason.
type Error struct {
	Problems []Problem
}

// Problem is one unit that kops cannot express.
type Problem struct {
	Unit string         // the unit's name
	Hook int            // the index of the hook it comes from
	Pos  hooks.Position // where that hook is written (Unit.Pos)
	Err  error          // one of the Err reasons
	Hint string         // what to do instead
}

func (e *Error) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "hooks[%d] (%s): %v", p.Hook, p.Unit, p.Err)
		if p.Hint != "" {
			b.WriteString("; " + p.Hint)
		}
	}
	return b.String()
}

// Diagnostics gives the problems as errors at the hooks the units come
// from, so that they are reported like the spec's own problems: in the
// spec's file, at the hook's line and column.
func (e *Error) Diagnostics() hooks.Diagnostics {
	var diags hooks.Diagnostics
	for _, p := range e.Problems {
		diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: p.Pos, Path: fmt.Sprintf("hooks[%d]", p.Hook),
			Message: p.Unit + ": " + p.Err.Error(), Hint: p.Hint})
	}
	diags.Sort()
	return diags
}

// Unwrap gives the reasons, for errors.Is.
func (e *Error) Unwrap() []error {
	errs := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		errs[i] = p.Err
	}
	return errs
}

// listComment heads the output, for whoever pastes it.
const listComment = `kops hooks rendered by hostprov, for spec.hooks of a kops Cluster or InstanceGroup
(apiVersion: kops.k8s.io/%s). Each manifest is the unit file, used unmodified.`

// outputHook is one hook of the kops output.
type outputHook struct {
	// Name is the full unit name, which kops keeps as it is because it
	// ends in a unit type.
	Name string
	// Manifest is the unit file, for useRawManifest: true. It is nil for a
	// hook that stops and disables a unit of the image (disabled: true in
	// v1alpha2, enabled: false in v1alpha3).
	Manifest []byte
	// Hook and Pos are the unit's (Unit.Hook, Unit.Pos): the hook it
	// comes from, for callers that refuse a hook for reasons of their own.
	Hook int
	Pos  hooks.Position
}

// decideHooks decides the kops hooks of the units, one per unit in spec
// order, for Render, which writes them as a hooks: list, and Set, which
// writes them into a manifest:
//
//   - a unit with contents and enabled becomes a raw hook: nodeup writes
//     the manifest unmodified as the unit file, keeps a name that ends in a
//     unit type (every hostprov name does), and enables and restarts
//     (--no-block) the unit;
//   - a unit of the image with enabled: false becomes a disabled hook,
//     which nodeup turns into systemctl stop and disable.
//
// Everything else has no kops form, and decideHooks returns a *Error
// naming each such unit and saying why: masks, drop-ins (for a unit
// hostprov writes or for one of the image), units with contents and
// enabled: false (kops would not write the file), templates (nodeup would
// fail to restart them), and units of the image the spec only enables.
func decideHooks(us []compile.Unit) ([]outputHook, error) {
	var probs []Problem
	refuse := func(u compile.Unit, err error, hint string) {
		probs = append(probs, Problem{Unit: u.Name, Hook: u.Hook, Pos: u.Pos, Err: err, Hint: hint})
	}
	var out []outputHook
	for _, u := range us {
		if u.DeviceOf != "" {
			probs = append(probs, Problem{Unit: u.DeviceOf, Hook: u.Hook, Pos: u.Pos,
				Err:  fmt.Errorf("%w (%s.d/%s)", ErrDeviceTimeout, u.Name, compile.DeviceTimeoutDropin),
				Hint: "drop deviceTimeout (systemd then waits 90 s for the device), or render the spec with --format ignition or cloud-init"})
			continue
		}
		if u.Mask {
			refuse(u, ErrMask, "remove the hook, or render it with --format ignition or cloud-init")
			continue
		}
		ok := true
		if len(u.Dropins) > 0 {
			hint := "write the drop-in's settings into the unit's own manifest"
			if u.Contents == nil {
				hint = "render it with --format ignition or cloud-init, or write the whole unit as a raw manifest"
			}
			var names []string
			for _, d := range u.Dropins {
				names = append(names, u.Name+".d/"+d.Name)
			}
			refuse(u, fmt.Errorf("%s: %w", strings.Join(names, ", "), ErrDropin), hint)
			ok = false
		}
		enabled := u.Enabled == nil || *u.Enabled
		switch {
		case u.Contents == nil && enabled:
			if len(u.Dropins) == 0 {
				refuse(u, ErrExisting, "write the unit as a raw manifest, or render it with --format ignition or cloud-init")
			}
			ok = false
		case u.Contents == nil:
			// Disable a unit of the image: kops's own use of a disabled hook.
		case !enabled:
			refuse(u, ErrDisabledUnit, "set enabled: true if the unit may run at every nodeup, or render it with --format ignition or cloud-init")
			ok = false
		case unitfiles.IsTemplate(u.Name):
			refuse(u, ErrTemplate, "name an instance (NAME@INSTANCE.service) in a hook of its own")
			ok = false
		case !utf8.Valid(u.Contents):
			// YAML, and so a kops manifest, holds only Unicode text.
			refuse(u, errors.New("the unit file is not UTF-8 text, which a kops manifest must be"), "")
			ok = false
		}
		if ok {
			out = append(out, outputHook{Name: u.Name, Manifest: u.Contents, Hook: u.Hook, Pos: u.Pos})
		}
	}
	if len(probs) > 0 {
		return nil, &Error{Problems: probs}
	}
	return out, nil
}

// Kops returns the hooks: list of a kops cluster or instance-group spec
// that installs the units, as decideHooks decides them, with a comment that
// says where it goes. A raw hook is {name, useRawManifest: true, manifest};
// the manifest is a YAML literal block where YAML can hold the bytes in
// one and a double-quoted scalar otherwise, and either way reads back as
// exactly the unit's bytes. A disabled hook is {name, disabled: true} or
// {name, enabled: false}, as opts.APIVersion spells it.
func Render(us []compile.Unit, opts Options) ([]byte, error) {
	version := opts.APIVersion
	switch version {
	case "":
		version = V1Alpha2
	case V1Alpha2, V1Alpha3:
	default:
		return nil, fmt.Errorf("kops API version %q: want %s or %s", opts.APIVersion, V1Alpha2, V1Alpha3)
	}
	if err := refuseStorage(opts.Storage); err != nil {
		return nil, err
	}
	hs, err := decideHooks(us)
	if err != nil {
		return nil, err
	}
	seq := &yaml.Node{Kind: yaml.SequenceNode}
	for _, h := range hs {
		n := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{yamlnode.Str("name"), yamlnode.Str(h.Name)}}
		switch {
		case h.Manifest != nil:
			yamlnode.Pairs(n, "useRawManifest", yamlnode.Bool(true), "manifest", yamlnode.Text(h.Manifest))
		case version == V1Alpha2:
			n.Content = append(n.Content, yamlnode.Str("disabled"), yamlnode.Bool(true))
			// kops (since 1.23) converts disabled only for Cluster hooks;
			// in a v1alpha2 InstanceGroup it runs the hook instead.
			n.Content[len(n.Content)-2].LineComment = "in a Cluster; a v1alpha2 InstanceGroup reads it the wrong way round (use --kops-api-version v1alpha3 there)"
		default:
			yamlnode.Pairs(n, "enabled", yamlnode.Bool(false))
		}
		seq.Content = append(seq.Content, n)
	}
	if len(seq.Content) == 0 {
		seq.Style = yaml.FlowStyle // hooks: []
	}
	key := yamlnode.Str("hooks")
	key.HeadComment = fmt.Sprintf(listComment, version)
	var b bytes.Buffer
	if err := yamlwrite.Encode(&b, &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{key, seq}}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ErrStorage is why the kops output refuses files, directories and
// links (ErrAccounts users and groups).
var ErrStorage = errors.New("a kops hook is a unit and nothing else: it cannot carry files, directories or links")

// refuseStorage refuses st, each entry at its place in the spec.
func refuseStorage(st compile.Storage) error {
	if st.Empty() {
		return nil
	}
	var e Error
	e.Problems = accountProblems(st)
	hint := "write the file in the unit's own ExecStartPre= (or a command hook's steps), or provision it with Ignition, Butane or cloud-init"
	for _, f := range st.Files {
		e.Problems = append(e.Problems, Problem{Unit: "file " + f.Path, Hook: f.Hook, Pos: f.Pos, Err: ErrStorage, Hint: hint})
	}
	for _, d := range st.Directories {
		e.Problems = append(e.Problems, Problem{Unit: "directory " + d.Path, Hook: d.Hook, Pos: d.Pos, Err: ErrStorage,
			Hint: "use StateDirectory= (stateDirectory:) or ExecStartPre=, or provision it with Ignition, Butane or cloud-init"})
	}
	for _, l := range st.Links {
		e.Problems = append(e.Problems, Problem{Unit: "link " + l.Path, Hook: l.Hook, Pos: l.Pos, Err: ErrStorage, Hint: hint})
	}
	return &e
}

// ErrAccounts is why the kops output refuses users and groups.
var ErrAccounts = errors.New("a kops hook is a unit and nothing else: it cannot create users or groups")

func accountProblems(st compile.Storage) []Problem {
	var ps []Problem
	hint := "create the account in the unit's own ExecStartPre= (or a command hook's steps), use DynamicUser=, or provision it with Ignition, Butane or cloud-init"
	for _, g := range st.Groups {
		ps = append(ps, Problem{Unit: "group " + g.Name, Hook: g.Hook, Pos: g.Pos, Err: ErrAccounts, Hint: hint})
	}
	for _, u := range st.Users {
		ps = append(ps, Problem{Unit: "user " + u.Name, Hook: u.Hook, Pos: u.Pos, Err: ErrAccounts, Hint: hint})
	}
	return ps
}
