package importer

import (
	"regexp"
	"strconv"
	"strings"

	butane "github.com/coreos/butane/config"
	butanecommon "github.com/coreos/butane/config/common"
	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/pkg/hooks"
)

// importButane translates a Butane config with Butane's own library (its
// local: files read from in.Dir) and imports the Ignition config it makes,
// reporting positions in the Butane file.
func importButane(in Input) (*Result, hooks.Diagnostics) {
	at := func(line, col int64) hooks.Position {
		return hooks.Position{File: in.Name, Line: int(line), Column: int(col)}
	}
	data := in.Data
	aheadOf := ""
	var head struct{ Variant, Version string }
	if yaml.Unmarshal(in.Data, &head) == nil {
		if exp, ok := butaneAhead[head.Variant+" "+head.Version]; ok {
			aheadOf = ahead36
			// Same length of lines before it, so every position
			// Butane reports is where it is in the file.
			data = butaneVersionRE.ReplaceAll(in.Data, []byte("${1}${2}"+exp+"${4}${5}"))
		}
	}
	out, rpt, err := butane.TranslateBytes(data, butanecommon.TranslateBytesOptions{TranslateOptions: butanecommon.TranslateOptions{FilesDir: in.Dir}})
	diags := reportDiags(rpt, at, "Butane")
	if err != nil || rpt.IsFatal() {
		if !diags.HasErrors(false) {
			msg := "Butane cannot translate this config: " + strings.TrimSpace(err.Error())
			d := hooks.Diagnostic{Severity: hooks.Error, Pos: hooks.Position{File: in.Name}, Message: msg,
				Hint: "check it with butane --strict"}
			if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
				// A YAML error of Butane's, at the line it names.
				d.Pos.Line, _ = strconv.Atoi(m[1])
				d.Message = "Butane cannot read this config: " + strings.Join(strings.Fields(err.Error()), " ")
			} else if strings.Contains(err.Error(), "No translator exists") {
				d.Pos, d.Path = butaneHeadPos(in), "version"
				d.Hint = "this Butane knows " + butaneVersions()
			}
			diags = append(diags, d)
		}
		return nil, diags
	}
	res, d := importIgnition(in, out, in.Data, aheadOf)
	if res != nil {
		res.Format = FormatButane
		res.butaneVariant, res.butaneVersion = head.Variant, head.Version
	}
	return res, append(diags, d...)
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// butaneHeadPos is where a Butane config's version is written.
func butaneHeadPos(in Input) hooks.Position {
	var doc yaml.Node
	if yaml.Unmarshal(in.Data, &doc) == nil && len(doc.Content) > 0 {
		if v := mapValue(doc.Content[0], "version"); v != nil {
			return hooks.Position{File: in.Name, Line: v.Line, Column: v.Column}
		}
	}
	return hooks.Position{File: in.Name}
}

func butaneVersions() string {
	return "fcos 1.0.0 to 1.7.0, flatcar 1.0.0 and 1.1.0, fiot 1.0.0, r4e 1.0.0 and 1.1.0, and their -experimental successors"
}
