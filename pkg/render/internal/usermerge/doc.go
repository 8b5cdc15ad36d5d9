// Package usermerge is what the Butane and the cloud-init output share to
// merge a user's own YAML config (render --merge) into theirs: the merge
// rule of mappings and lists (MergeYAML), finding a node by its path
// (YAMLAt), where the spec makes a path or an account for a message about
// a clash (StoragePlace, AccountPlace, AccountClash), and an account as
// both write it (UserYAML), so that an entry of the user's and hostprov's
// are compared key by key.
//
// It links no Butane or Ignition library: cloud-init merges through it
// without carrying them.
package usermerge
