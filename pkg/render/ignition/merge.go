package ignition

import (
	"fmt"
	"strings"

	"github.com/coreos/ignition/v2/config/merge"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/render"
	"github.com/hostprov/hostprov/pkg/render/internal/ignconfig"
)

// Merge returns own, hostprov's Ignition config of the
// units (and whatever else the spec puts there) at opts.Version, with the user's configs merged into it, in order, by
// Ignition's own merge (config/merge): hostprov's config is the parent,
// each file a child, the way Ignition merges a config named in
// ignition.config.merge at boot. A file is an Ignition config of any spec
// version up to opts.Version, translated up with Ignition's own code, or a
// Butane config, translated with Butane (its local: files read from the
// file's directory) to an Ignition version up to opts.Version.
//
// A unit both a file and the spec make must agree (see ignconfig.CheckUnitClashes);
// every disagreement, and every problem Ignition or Butane find in a file,
// is a diagnostic with its place. The output is nil when there is an error.
// The merged config is checked with Ignition's own validation of
// opts.Version, and written with its keys sorted and without empty objects,
// lists or nulls, compact unless opts.Pretty.
//
// Besides units, a path that own's storage and a file both
// have (files, directories, links) is an error at the file's entry unless
// the two entries are the same, and so is a user or group both make with
// a field both set to other values: Ignition's merge would let the
// file's win silently. opts.Storage, the spec's storage that own was
// written from, says where the spec has them.
func Merge(own []byte, us []compile.Unit, opts Options, files []render.MergeFile) ([]byte, hooks.Diagnostics, error) {
	opts, err := opts.Resolve()
	if err != nil {
		return nil, nil, err
	}
	merged, rpt, err := ignconfig.Parse(opts.Version, own)
	if err != nil || rpt.IsFatal() {
		return nil, nil, fmt.Errorf("Ignition refuses hostprov's own config: %v %s", err, rpt)
	}
	var diags hooks.Diagnostics
	for _, f := range files {
		cfg, d := ignconfig.UserConfig(f, opts.Version, "--format ignition")
		diags = append(diags, d...)
		if cfg == nil {
			continue
		}
		d, err := ignconfig.CheckClashes(own, cfg, f, opts.Storage, us)
		if err != nil {
			return nil, nil, err
		}
		diags = append(diags, d...)
		merged, _ = merge.MergeStructTranscribe(merged, cfg)
	}
	diags.Sort()
	if diags.HasErrors(false) {
		return nil, diags, nil
	}
	out, err := ignconfig.PrunedJSON(merged, opts.Pretty)
	if err != nil {
		return nil, nil, err
	}
	if _, rpt, err := ignconfig.Parse(opts.Version, out); err != nil || rpt.IsFatal() {
		msg := fmt.Sprint(err)
		if err == nil {
			msg = rpt.String()
		}
		diags = append(diags, ignconfig.MergedRefused(files, "Ignition refuses the merged config: "+strings.TrimSpace(msg),
			"change your config so that, merged with hostprov's units, it is valid"))
		return nil, diags, nil
	}
	return out, diags, nil
}

// Validate is Ignition's own parse and validation of a config of
// version, as diagnostics without positions (for generated output).
func Validate(version string, data []byte) hooks.Diagnostics {
	return ignconfig.Validate(version, data)
}
