package kops

import (
	"strings"

	"github.com/hostprov/hostprov/pkg/hooks"
)

// CheckAll reports the problems of every hook of the manifests: each
// document's hooks are rendered on their own, as Render renders them, so
// that the problems of a file are reported at once, even when it is not
// settled which machine's hooks are wanted or the file has other errors.
// A person then fixes them in one round, not one round per layer of checks.
//
// Hooks that prior holds an error inside (by file and hook path) are left
// out, since what the reader could not read would only give problems that
// follow from it; problems prior holds already are not repeated. rt is the
// container runtime of execContainer hooks.
func CheckAll(m *Manifests, rt Runtime, prior hooks.Diagnostics) hooks.Diagnostics {
	if m == nil {
		return nil
	}
	var all []*Manifest
	var docs []*Manifests
	if m.Cluster != nil {
		all = append(all, m.Cluster)
		docs = append(docs, &Manifests{Cluster: m.Cluster})
	}
	for _, g := range m.InstanceGroups {
		all = append(all, g)
		docs = append(docs, &Manifests{InstanceGroups: []*Manifest{g}})
	}
	// A hook is known by its document and its path there: one file may
	// hold several documents, each with a spec.hooks[0].
	type hookKey struct {
		doc  *Manifest
		path string
	}
	bad := map[hookKey]bool{}
	seen := map[string]bool{}
	for _, d := range prior {
		seen[d.String()] = true
		if d.Severity == hooks.Error {
			if hp := hookPath(d.Path); hp != "" {
				bad[hookKey{documentAt(all, d.Pos), hp}] = true
			}
		}
	}
	var out hooks.Diagnostics
	add := func(ds hooks.Diagnostics) {
		for _, d := range ds {
			if s := d.String(); !seen[s] {
				seen[s] = true
				out = append(out, d)
			}
		}
	}
	for _, doc := range docs {
		ig := ""
		if len(doc.InstanceGroups) == 1 {
			ig = doc.InstanceGroups[0].Name
		}
		hs, d := doc.Hooks("", ig)
		add(d)
		var good []NodeHook
		for _, h := range hs {
			if !bad[hookKey{h.m, h.Path}] {
				good = append(good, h)
			}
		}
		_, d = Render(good, rt)
		add(d)
	}
	out.Sort()
	return out
}

// documentAt is the document of ms that pos is in: the last one of its
// file that starts at or before it.
func documentAt(ms []*Manifest, pos hooks.Position) *Manifest {
	var at *Manifest
	for _, m := range ms {
		if m.Pos.File == pos.File && m.Pos.Line <= pos.Line && (at == nil || m.Pos.Line > at.Pos.Line) {
			at = m
		}
	}
	return at
}

// hookPath is the path of the hook a diagnostic's path is inside
// ("spec.hooks[2]" of "spec.hooks[2].manifest"), or "" outside any hook.
func hookPath(path string) string {
	const prefix = "spec.hooks["
	if !strings.HasPrefix(path, prefix) {
		return ""
	}
	end := strings.IndexByte(path[len(prefix):], ']')
	if end < 0 {
		return ""
	}
	return path[:len(prefix)+end+1]
}
