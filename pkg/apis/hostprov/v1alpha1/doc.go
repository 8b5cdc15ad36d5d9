// Package v1alpha1 is hostprov's Kubernetes API, group hostprov.dev: a
// HostHooks holds a hook spec's hooks and the nodes they are for; a
// NodeHooks is one node's result for one HostHooks.
//
// The flow: a person writes a HostHooks; admission runs hostprov's own
// spec validation on it; the controller creates a NodeHooks for each node
// the selector matches and, as the rollout allows, approves the node for
// the HostHooks' current hooks (NodeHooks.spec.hooksHash); the agent on
// that node applies them as one spec set and reports in the NodeHooks
// status; the controller sums the NodeHooks into the HostHooks status.
//
// +kubebuilder:object:generate=true
// +groupName=hostprov.dev
package v1alpha1
