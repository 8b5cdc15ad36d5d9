// Package kopshooks is the kops output: hostprov's units as the hooks of a
// kops Cluster or InstanceGroup spec. Render writes them as a hooks: list
// to paste (--format kops); Set writes them into a kops manifest in place
// (hostprov kops set-hooks), keeping every other byte of the file. Both
// take the same decision of what a kops hook can carry, and refuse
// the rest with an *Error that names each unit at its hook.
//
// Reading kops manifests is an input, and stays in package
// [github.com/hostprov/hostprov/pkg/kops]; Set uses it to find where the
// hooks go and to read back what it wrote.
package kopshooks
