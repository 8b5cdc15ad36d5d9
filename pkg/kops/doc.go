// Package kops reads the hooks of kops cluster specs and renders them as
// kops nodeup does or canonically: kops manifests as an input. Writing
// hostprov's units back into a manifest is an output, package
// [github.com/hostprov/hostprov/pkg/render/kopshooks].
//
// The pipeline for rendering is:
//
//	ms, diags := kops.Read(file, data)          // each file; kops.Merge for several
//	hs, more := ms.Hooks(role, instanceGroup)   // kops's role filter, names, overrides
//	tasks, err := kops.RenderCompat(hs, rt)     // --compat kops: kops's bytes
//	units, more := kops.Render(hs, rt)          // default: canonical hostprov units
//
// # Reading
//
// kops's own decoding is lenient: it drops unknown fields, keeps the last
// of duplicate keys, and its validation leaves much to nodeup, which skips
// or misreads some hooks without a word. Read is strict about hooks and
// says so at the line and column; everything else of a manifest is kops's
// business and is skipped. Decisions taken from kops's source (kops
// 268927e, 2026):
//
//   - v1alpha2 spells enablement "disabled", v1alpha3 "enabled". The other
//     version's spelling is an error, not accepted: kops decodes it into
//     nothing, so "enabled: false" in a v1alpha2 manifest leaves the hook
//     enabled on every kops node.
//   - kops's v1alpha2 conversion inverts "disabled" for Cluster hooks only
//     (Convert_v1alpha2_ClusterSpec_To_kops_ClusterSpec); an
//     InstanceGroup's "disabled: true" reaches nodeup as Enabled=true. Read
//     follows kops, in both renderings, and warns at the line.
//   - Master is ControlPlane in v1alpha2 (roles and spec.role); in v1alpha3
//     it is an error, as is any unknown role (kops compares roles exactly,
//     so such a hook would match no machine).
//   - kops/v1alpha2 is read as kops.k8s.io/v1alpha2, as kops does.
//
// # Differences of canonical rendering from kops
//
// Render gives the same units as kops nodeup, by the same names, except:
//
//  1. Every generated unit has an [Install] section (WantedBy=
//     multi-user.target), so that the hook runs again after a reboot; kops
//     writes none for manifest hooks, so they are "static" and never run
//     after the first boot (kops issue 14527).
//  2. The execContainer command is written from an argument list with
//     systemd's quoting: "%" becomes "%%" and "$" becomes "$$", so that
//     the container gets exactly the arguments written. kops passes them
//     unescaped, so systemd expands specifiers and variables in them, and
//     turns non-ASCII bytes into \xNN.
//  3. An execContainer unit has After= its runtime (containerd.service or
//     docker.service) as well as Requires=; kops's Requires= alone lets
//     systemd start both at once.
//  4. The environment of an execContainer is passed sorted by name; kops
//     passes it in Go's random map order, so its unit changes from run to
//     run and nodeup restarts the hook for nothing.
//  5. Generated units are canonical: a provenance comment first, sections
//     in a fixed order, entries sorted by key with repeated keys in order.
//     kops writes the manifest text after its [Service] header as given.
//  6. A manifest is parsed as the body of [Service]: a manifest with a
//     section header ([Unit], [Install], ...) without useRawManifest is an
//     error with the hint to set useRawManifest, where kops nests the
//     sections inside its own [Service]. A manifest without ExecStart= is
//     an error, where kops writes a service that systemd refuses.
//  7. Names are checked against systemd's rules, and unit names of
//     Requires= and Before= too; raw manifests must parse as unit files.
//     kops writes whatever it is given.
//  8. A raw manifest ends with exactly one newline and LF line endings, as
//     every raw manifest in hostprov; kops writes it byte for byte.
//
// What both renderings share: the name rules (kops-hook-<index>[-ig],
// .service appended unless the name ends in a unit type, the instance
// group's hook of a name overriding the cluster's), the role filter, kops's
// Description=Kops Hook NAME, and a disabled hook meaning "disable the
// existing unit of that name, write no file".
package kops
