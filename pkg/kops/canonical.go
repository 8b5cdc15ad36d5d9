package kops

import (
	"fmt"
	"strings"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// Render renders hooks canonically: as hostprov hooks (see Spec), through
// package render, so that they get everything hostprov does better than
// kops. The units are in the order of hs; a Unit's Hook is the index in hs
// of the hook it comes from.
//
// Every diagnostic points into the kops manifest the hook was read from,
// with a path of that manifest ("spec.hooks[1].manifest"). Callers must
// not use the units when diags.HasErrors(strict).
func Render(hs []NodeHook, rt Runtime) ([]compile.Unit, hooks.Diagnostics) {
	spec, from, diags := Spec(hs, rt)
	if spec == nil {
		return nil, diags
	}
	us, more := compile.Units(spec)
	for _, d := range more {
		diags = append(diags, from.translate(d))
	}
	for i := range us {
		us[i].Hook = from.index[us[i].Hook]
	}
	diags.Sort()
	return us, diags
}

// Origins maps the paths of a Spec made by Spec back to the kops
// manifests its hooks were read from.
type Origins struct {
	// index[i] is the index in the NodeHook list of Spec.Hooks[i].
	index []int
	hooks []NodeHook
	// paths maps a path of the Spec to the path of the kops manifest,
	// relative to the hook ("name", "execContainer.image").
	paths []map[string]string
}

// translate rewrites a diagnostic of the Spec into one of the kops
// manifest: its path becomes the manifest's path, its file the hook's.
func (o *Origins) translate(d hooks.Diagnostic) hooks.Diagnostic {
	i, rest, ok := specHookIndex(d.Path)
	if !ok || i >= len(o.index) {
		return d
	}
	h := o.hooks[o.index[i]]
	d.Pos.File = h.File
	rel := rest
	for {
		if k, ok := o.paths[i][rel]; ok {
			d.Path = joinPath(h.Path, k)
			return d
		}
		if rel == "" {
			d.Path = h.Path
			return d
		}
		rel = hooks.ParentPath(rel)
	}
}

// specHookIndex splits "hooks[3].exec[2]" into 3 and "exec[2]".
func specHookIndex(path string) (int, string, bool) {
	if !strings.HasPrefix(path, "hooks[") {
		return 0, "", false
	}
	end := strings.IndexByte(path, ']')
	if end < 0 {
		return 0, "", false
	}
	var i int
	if _, err := fmt.Sscanf(path[len("hooks["):end], "%d", &i); err != nil {
		return 0, "", false
	}
	return i, strings.TrimPrefix(path[end+1:], "."), true
}

func joinPath(a, b string) string {
	switch {
	case b == "":
		return a
	case strings.HasPrefix(b, "["):
		return a + b
	}
	return a + "." + b
}

// Spec converts hooks into a hostprov hook spec, the canonical meaning of
// what kops renders for them:
//
//   - the name is kops's (kops-hook-<index>[-ig] for unnamed hooks), with
//     .service appended unless it ends in a unit type;
//   - a disabled hook is an existing unit to disable, with no file, as in
//     kops (the unit is stopped too by apply only when it is hostprov's);
//   - a raw manifest is the unit, as written;
//   - a manifest hook keeps kops's Description=Kops Hook NAME, Requires=
//     and Before=, and its manifest is the body of [Service];
//   - an execContainer is a oneshot service that pulls the image and runs
//     it with ctr (or docker) as kops does, written from an argument
//     list, so that every argument reaches the container exactly.
//
// Positions of the Spec point into the kops manifests. A non-raw manifest
// with a section header is refused here, because hostprov would not
// silently nest it in [Service] as kops does; those hooks are left out of
// the Spec. The Origins map the Spec's paths back to the manifests.
func Spec(hs []NodeHook, rt Runtime) (*hooks.Spec, *Origins, hooks.Diagnostics) {
	var diags hooks.Diagnostics
	if rt != Containerd && rt != Docker {
		diags = append(diags, hooks.Diagnostic{Message: fmt.Sprintf("unknown container runtime %q", rt),
			Hint: fmt.Sprintf("use %s or %s", Containerd, Docker)})
		return nil, nil, diags
	}
	file := ""
	if len(hs) > 0 {
		file = hs[0].File
	}
	o := &Origins{hooks: hs}
	spec := hooks.NewSpec(file, nil)
	var out []hooks.Hook
	for i, h := range hs {
		if bad := checkSections(h); bad != nil {
			diags = append(diags, *bad)
			continue
		}
		p := fmt.Sprintf("hooks[%d]", len(out))
		paths := map[string]string{"": ""}
		locate := func(sp, kp string) {
			paths[sp] = kp
			spec.Locate(p+joinSpecPath(sp), h.Where(kp))
		}
		locate("", "")
		locate("name", "name")
		hh := hooks.Hook{Name: h.Name}
		if !h.IsEnabled() {
			f := false
			hh.Enabled = &f
			locate("enabled", enabledField(h))
			out = append(out, hh)
			o.index = append(o.index, i)
			o.paths = append(o.paths, paths)
			continue
		}
		if h.UseRawManifest {
			hh.UseRawManifest = true
			hh.Manifest = h.Manifest
			locate("useRawManifest", "useRawManifest")
			locate("manifest", "manifest")
			spec.LocateLines(p+".manifest", h.node("manifest"), h.m.src)
			out = append(out, hh)
			o.index = append(o.index, i)
			o.paths = append(o.paths, paths)
			continue
		}
		hh.Description = "Kops Hook " + h.Name
		locate("description", "name")
		hh.Requires = append([]string(nil), h.Requires...)
		for k := range h.Requires {
			locate(fmt.Sprintf("requires[%d]", k), fmt.Sprintf("requires[%d]", k))
		}
		hh.Before = append([]string(nil), h.Before...)
		for k := range h.Before {
			locate(fmt.Sprintf("before[%d]", k), fmt.Sprintf("before[%d]", k))
		}
		if ec := h.ExecContainer; ec != nil {
			execContainerHook(&hh, h.Name, len(h.Requires), ec, rt, locate)
		} else {
			hh.Manifest = h.Manifest
			locate("manifest", "manifest")
			spec.LocateLines(p+".manifest", h.node("manifest"), h.m.src)
		}
		out = append(out, hh)
		o.index = append(o.index, i)
		o.paths = append(o.paths, paths)
	}
	spec.Hooks = out
	return spec, o, diags
}

// execContainerHook makes hh run ec as kops does, with rt: pull the image,
// then run it once, after the runtime. locate places each field it sets
// at the field of the kops hook it comes from; the hook had
// requiresBefore entries of requires before the runtime's.
func execContainerHook(hh *hooks.Hook, hookName string, requiresBefore int, ec *ExecContainer, rt Runtime, locate func(sp, kp string)) {
	image := strings.TrimSpace(ec.Image)
	pull, run, requires := containerCommands(rt, image, hookName, ec, true)
	hh.Type = "oneshot"
	hh.Pre = [][]string{pull}
	hh.Exec = run
	// kops only Requires= the runtime; without After= systemd
	// starts both at once and the pull can fail.
	hh.Requires = append(hh.Requires, requires)
	hh.After = []string{requires}
	locate(fmt.Sprintf("requires[%d]", requiresBefore), "execContainer")
	locate("after", "execContainer")
	locate("type", "execContainer")
	locate("pre", "execContainer.image")
	locate("exec", "execContainer")
	// The arguments of the run command: kops's fixed ones, the
	// environment, the image, the name, then the command.
	fixed := len(run) - len(ec.Command)
	for k := range ec.Command {
		locate(fmt.Sprintf("exec[%d]", fixed+k), fmt.Sprintf("execContainer.command[%d]", k))
	}
	for k := 0; k < fixed; k++ {
		a := run[k]
		switch {
		case strings.HasPrefix(a, "--env"):
		case k > 0 && run[k-1] == "--env":
			name, _, _ := strings.Cut(a, "=")
			locate(fmt.Sprintf("exec[%d]", k), "execContainer.environment."+name)
		case a == image || a == containerdImage(image):
			locate(fmt.Sprintf("exec[%d]", k), "execContainer.image")
		}
	}
}

func joinSpecPath(p string) string {
	if p == "" {
		return ""
	}
	return "." + p
}

func enabledField(h NodeHook) string {
	if h.node("enabled") != nil {
		return "enabled"
	}
	return "disabled"
}

// checkSections refuses a non-raw manifest that holds a section header:
// kops pastes it under [Service], so the unit's own [Unit], [Service] and
// [Install] end up nested in the [Service] kops writes (kops issue 5904;
// the "[unit]" in a cluster template of the corpus).
func checkSections(h NodeHook) *hooks.Diagnostic {
	if !h.IsEnabled() || h.UseRawManifest || h.ExecContainer != nil || h.Manifest == "" {
		return nil
	}
	for i, line := range strings.Split(h.Manifest, "\n") {
		t := strings.TrimSpace(line)
		if len(t) < 2 || t[0] != '[' || t[len(t)-1] != ']' {
			continue
		}
		pos := hooks.NewSpec(h.File, nil)
		pos.Locate("m", h.Where("manifest"))
		pos.LocateLines("m", h.node("manifest"), h.m.src)
		return &hooks.Diagnostic{
			Severity: hooks.Error,
			Pos:      pos.WhereInScalar("m", i+1),
			Path:     h.Path + ".manifest",
			Message: fmt.Sprintf("manifest line %d is the section header %s, but without useRawManifest the manifest is the body of [Service]: "+
				"kops pastes it under its own [Service] header, nesting one unit in another", i+1, t),
			Hint: "set useRawManifest: true in this hook to use the manifest as the whole unit file",
		}
	}
	return nil
}
