package importer

import (
	"fmt"
	"strings"

	types "github.com/coreos/ignition/v2/config/v3_5/types"

	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/units"
)

// units makes a hook of every unit: a raw hook (useRawName and
// useRawManifest) of a unit with contents, a drop-in-only hook of one
// without, a mask hook of a masked one.
func (im *ignImporter) units(us []types.Unit) {
	for i, u := range us {
		p := []any{"systemd", "units", i}
		h := hooks.Hook{Name: u.Name, UseRawName: true}
		o := hookOrigins{hook: im.origin(p)}
		mask := u.Mask != nil && *u.Mask
		if mask {
			h.Mask = true
			if u.Contents != nil {
				im.move(append(p, "contents"), "the contents of a masked unit",
					"a masked unit is linked to /dev/null and its file is never read; unmask it to have its contents")
			}
			if u.Enabled != nil {
				h.Enabled = u.Enabled
			}
		} else if u.Contents != nil {
			contents := *u.Contents
			f, err := units.Parse([]byte(contents))
			if err != nil {
				msg := err.Error()
				if pe, ok := err.(*units.ParseError); ok {
					msg = fmt.Sprintf("line %d: %s", pe.Line, pe.Msg)
				}
				im.drop(p, []any{"contents"}, "the unit "+u.Name+" is not a unit file hostprov reads: "+msg,
					"fix the unit file; systemd would not load it as meant either")
				continue
			}
			h.UseRawManifest = true
			h.Manifest = contents
			if string(units.NormalizeRaw([]byte(contents))) != contents {
				// hostprov would write it with line feeds and one
				// final newline; exactBytes keeps the config's bytes
				// in every output (see exactBytes).
				h.ExactBytes = true
				im.warn(append(p, "contents"), exactBytesMsg("unit file", contents), exactBytesHint)
			}
			install := hasInstall(f)
			switch {
			case u.Enabled == nil && install:
				// Ignition leaves a unit it is not told to enable or
				// disable as the system's presets have it (systemd's
				// preset-all at first boot, with the image's preset
				// files). A hook is enabled or disabled, never "as the
				// presets say": kops has no way to say it (nodeup starts
				// a hook whose unit has WantedBy=multi-user.target), and
				// a cloud-init or apply node would have to run systemctl
				// preset, which decides by files of the image that differ
				// between images. So the unit, with its drop-ins, goes to
				// the leftovers as written, rather than into the spec with
				// enabled: false, which would disable a unit the presets
				// may enable.
				im.drop(p, []any{"name"}, "the config neither enables nor disables "+u.Name+", which Ignition leaves to the system's presets; a hook is enabled or disabled, so the unit stays as written",
					"to have the unit as a hook, write enabled: true or enabled: false on it in the config and import it again")
				continue
			case u.Enabled != nil && *u.Enabled && !install:
				im.move(append(p, "enabled"), u.Name+" is enabled but has no [Install] section with entries, so enabling it does nothing; hostprov does not tell Ignition to enable it",
					"add an [Install] section (for example WantedBy=multi-user.target), or remove enabled: true")
			case u.Enabled != nil && !*u.Enabled:
				h.Enabled = u.Enabled
			}
		} else {
			h.Enabled = u.Enabled
		}
		for j, d := range u.Dropins {
			dp := append(append([]any(nil), p...), "dropins", j)
			if d.Contents == nil {
				im.move(dp, "the drop-in "+d.Name+" has no contents",
					"give the drop-in its contents, or remove it")
				continue
			}
			if _, err := units.Parse([]byte(*d.Contents)); err != nil {
				im.drop(dp, []any{"contents"}, "the drop-in "+d.Name+" is not a unit file hostprov reads: "+err.Error(),
					"fix the drop-in; systemd would not load it as meant either")
				continue
			}
			if string(units.NormalizeRaw([]byte(*d.Contents))) != *d.Contents {
				h.ExactBytes = true
				im.warn(append(dp, "contents"), exactBytesMsg("drop-in", *d.Contents), exactBytesHint)
			}
			h.Dropins = append(h.Dropins, hooks.Dropin{Name: d.Name, Contents: *d.Contents})
			o.dropins = append(o.dropins, im.origin(dp))
		}
		if !h.Mask && !h.UseRawManifest && len(h.Dropins) == 0 && h.Enabled == nil {
			im.move(p, "the unit "+u.Name+" has nothing hostprov can say: no contents, drop-ins, enabled or mask",
				"remove the unit, or say what Ignition is to do with it")
			continue
		}
		im.hooks = append(im.hooks, h)
		im.origins = append(im.origins, o)
	}
}

// exactBytesMsg says that a unit file's or drop-in's text, which hostprov
// would write with line feeds and one final newline, is kept as it is.
// The spec could hold the normalised text, which systemd reads the same,
// but then no output would be the config's bytes, and a unit of a node the
// config made would be another file to apply. The leftovers cannot hold
// the text instead: a merge refuses a unit whose contents the spec and the
// leftovers both give, and in the leftovers the unit would be no hook.
func exactBytesMsg(what, text string) string {
	return "the " + what + " " + describeNewlines(text) + ", which hostprov would write with line feeds and one final newline; kept byte for byte with exactBytes: true on its hook"
}

const exactBytesHint = "nothing to do: systemd reads both the same; drop exactBytes from the hook to have hostprov's line endings"

func describeNewlines(s string) string {
	switch {
	case strings.Contains(s, "\r"):
		return "has carriage returns"
	case !strings.HasSuffix(s, "\n"):
		return "does not end with a newline"
	}
	return "ends with more than one newline"
}

// hasInstall reports whether a unit file's [Install] section has an
// entry: what Ignition and systemctl enable look for.
func hasInstall(f *units.File) bool {
	s := f.Section(units.SectionInstall)
	return s != nil && len(s.Entries) > 0
}
