package pipeline

import (
	"strings"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/kops"
)

// loadKops renders the hooks of kops manifests. When the manifests have
// errors, or which machine's hooks to render is not settled, the hooks of
// every document are still checked, so that the next run is not a new
// round.
func loadKops(in []Input, opts KopsOptions) (*Result, error) {
	r := &Result{Kops: true}
	var ms []*kops.Manifests
	var names []string
	for _, i := range in {
		m, d := kops.Read(i.Name, i.Data)
		ms = append(ms, m)
		r.Diagnostics = append(r.Diagnostics, d...)
		names = append(names, i.Name)
	}
	r.Label = strings.Join(names, ", ")
	var role kops.Role
	if opts.Role != "" {
		var err error
		if role, err = kops.ParseRole(opts.Role); err != nil {
			return &Result{Kops: true}, inputError("--role: %v", err)
		}
	}
	m, d := kops.Merge(ms...)
	r.Diagnostics = append(r.Diagnostics, d...)
	hs, d := m.Hooks(role, opts.InstanceGroup)
	r.Diagnostics = append(r.Diagnostics, d...)
	if r.Diagnostics.HasErrors(false) {
		rt, err := kopsRuntime(opts.Runtime, m)
		if err != nil {
			rt = kops.Containerd
		}
		r.Diagnostics = append(r.Diagnostics, kops.CheckAll(m, rt, r.Diagnostics)...)
		return r, nil
	}
	rt, err := kopsRuntime(opts.Runtime, m)
	if err != nil {
		return &Result{Kops: true}, err
	}
	switch opts.Compat {
	case "":
		us, d := kops.Render(hs, rt)
		r.Units, r.Diagnostics = us, append(r.Diagnostics, d...)
		return r, nil
	case "kops":
		tasks, err := kops.RenderCompat(hs, rt)
		if err != nil {
			return r, inputError("%v", err)
		}
		r.Units = make([]compile.Unit, len(tasks))
		for i, t := range tasks {
			r.Units[i] = t.Unit
		}
		return r, nil
	}
	return &Result{Kops: true}, inputError(`unknown --compat %q: the only compatibility mode is "kops"`, opts.Compat)
}

// kopsRuntime is the container runtime execContainer hooks run with: the
// option's, else the cluster's (kops defaults to containerd).
func kopsRuntime(rt string, m *kops.Manifests) (kops.Runtime, error) {
	if rt == "" && m.Cluster != nil {
		rt = m.Cluster.ContainerRuntime
	}
	switch kops.Runtime(rt) {
	case "", kops.Containerd:
		return kops.Containerd, nil
	case kops.Docker:
		return kops.Docker, nil
	}
	return "", inputError("unknown container runtime %q: use containerd or docker", rt)
}
