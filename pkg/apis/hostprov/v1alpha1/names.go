package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// SetPrefix starts the name of every spec set that an agent applies for a
// HostHooks, so that the agent tells its sets from the node's others (the
// specs in /etc/hostprov/hooks.d, say), which it never touches.
const SetPrefix = "hosthooks."

// SetName is the spec set that a HostHooks is on a node.
func SetName(hostHooks string) string { return SetPrefix + hostHooks }

// HostHooksOfSet is the HostHooks whose spec set is set, or "" when set is
// not an agent's.
func HostHooksOfSet(set string) string {
	if name, ok := strings.CutPrefix(set, SetPrefix); ok {
		return name
	}
	return ""
}

// NodeHooksName is the name of the NodeHooks of a node for a HostHooks:
// "HOSTHOOKS.NODE-HASH", the readable part shortened when the whole would
// be longer than an object's name may be. Both names may have dots, so
// "HOSTHOOKS.NODE" alone is ambiguous (base on node w1.lab and base.w1
// on node lab are both base.w1.lab); HASH, of the two names apart, tells
// such pairs from each other.
//
// The agent of the node watches its NodeHooks by this name: the API
// server's watch cache indexes watches by name, so that an event of one
// NodeHooks wakes only its agent's watch, where a watch by label would wake
// every agent's. The controller replaces a NodeHooks of another name (an
// earlier naming), which no agent reads.
func NodeHooksName(hostHooks, node string) string {
	// "/" is in neither name: each pair has a text of its own.
	sum := sha256.Sum256([]byte(hostHooks + "/" + node))
	h := hex.EncodeToString(sum[:])[:10]
	p := hostHooks + "." + node
	if keep := 253 - len(h) - 1; len(p) > keep {
		p = strings.TrimRight(p[:keep], ".-")
	}
	return p + "-" + h
}

// LabelValue is s as a label value: s itself when it is short enough and
// a valid one, otherwise a prefix of it and a hash of the whole. Node and
// HostHooks names are DNS subdomains, which may be longer than a label.
func LabelValue(s string) string {
	if len(s) <= 63 && strings.Trim(s, ".-_") == s {
		return s
	}
	return shorten(s, 63)
}

func shorten(s string, max int) string {
	if len(s) <= max && strings.Trim(s, ".-_") == s {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	h := hex.EncodeToString(sum[:])[:16]
	keep := max - len(h) - 1
	if keep > len(s) {
		keep = len(s)
	}
	p := strings.TrimRight(s[:keep], ".-_")
	if p == "" {
		return h
	}
	return p + "-" + h
}

// HooksHash is the content hash of hooks: the same hooks have the same
// hash whatever else changes in the HostHooks (its selector, its rollout,
// its labels), so that only a change of hooks rolls out again.
func HooksHash(hooks []Hook) string {
	// encoding/json writes struct fields in order and map keys sorted:
	// one hash for one list of hooks.
	b, err := json.Marshal(hooks)
	if err != nil {
		// Only unsupported types fail to marshal, and Hook has none.
		panic(err)
	}
	sum := sha256.Sum256(b)
	return "sha256-" + hex.EncodeToString(sum[:])
}

// HookSpec is the hook spec document of spec: the hooks of the HostHooks
// named name, as the YAML (JSON is YAML) that `hostprov validate` reads,
// with name as its metadata.name. Paths of its diagnostics ("hooks[1].exec")
// are the HostHooks' paths under "spec.".
func (s *HostHooksSpec) HookSpec(name string) []byte {
	doc := struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   map[string]string `json:"metadata"`
		Hooks      []Hook            `json:"hooks"`
	}{"hostprov/v1alpha1", "Hooks", map[string]string{"name": SetName(name)}, s.Hooks}
	if doc.Hooks == nil {
		doc.Hooks = []Hook{}
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}
