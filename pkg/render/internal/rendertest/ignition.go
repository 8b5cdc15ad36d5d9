package rendertest

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"testing"

	v30 "github.com/coreos/ignition/v2/config/v3_0"
	v31 "github.com/coreos/ignition/v2/config/v3_1"
	v32 "github.com/coreos/ignition/v2/config/v3_2"
	v33 "github.com/coreos/ignition/v2/config/v3_3"
	v34 "github.com/coreos/ignition/v2/config/v3_4"
	v35 "github.com/coreos/ignition/v2/config/v3_5"
	"github.com/coreos/vcontext/report"
	"github.com/google/go-cmp/cmp"
	"github.com/vincent-petithory/dataurl"

	"github.com/hostprov/hostprov/pkg/render/internal/ignconfig"
)

// IgnitionParsers are Ignition's own parsers, one per spec version, each
// returning the config's systemd section as JSON.
var IgnitionParsers = map[string]func([]byte) ([]byte, report.Report, error){
	"3.0.0": parseWith(v30.Parse),
	"3.1.0": parseWith(v31.Parse),
	"3.2.0": parseWith(v32.Parse),
	"3.3.0": parseWith(v33.Parse),
	"3.4.0": parseWith(v34.Parse),
	"3.5.0": parseWith(v35.Parse),
}

func parseWith[C any](parse func([]byte) (C, report.Report, error)) func([]byte) ([]byte, report.Report, error) {
	return func(b []byte) ([]byte, report.Report, error) {
		cfg, rpt, err := parse(b)
		if err != nil {
			return nil, rpt, err
		}
		j, err := json.Marshal(cfg)
		return j, rpt, err
	}
}

// IgnitionSystemd is the part of an Ignition config hostprov writes, the same in
// every spec version.
type IgnitionSystemd struct {
	Ignition struct {
		Version string `json:"version"`
	} `json:"ignition"`
	Systemd struct {
		Units []ignconfig.NeutralUnit `json:"units"`
	} `json:"systemd"`
}

// ParseIgnition parses an Ignition config with the parser of its version,
// fails the test on any error or warning, and returns its units.
func ParseIgnition(t *testing.T, version string, ign []byte) IgnitionSystemd {
	t.Helper()
	parse := IgnitionParsers[version]
	if parse == nil {
		t.Fatalf("no parser for Ignition %s", version)
	}
	j, rpt, err := parse(ign)
	if err != nil {
		t.Fatalf("Ignition %s's parser refuses the config: %v\n%s\n%s", version, err, rpt, ign)
	}
	if len(rpt.Entries) > 0 {
		t.Fatalf("Ignition %s's parser reports:\n%s", version, rpt)
	}
	var cfg IgnitionSystemd
	if err := json.Unmarshal(j, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Ignition.Version != version {
		t.Fatalf("config has version %q, want %q", cfg.Ignition.Version, version)
	}
	return cfg
}

// Files are the unit files and drop-ins of the config, by their path in
// a unit directory (NAME, NAME.d/FILE).
func (c IgnitionSystemd) Files() map[string]string {
	files := map[string]string{}
	for _, u := range c.Systemd.Units {
		if u.Contents != nil {
			files[u.Name] = *u.Contents
		}
		for _, d := range u.Dropins {
			files[u.Name+".d/"+d.Name] = *d.Contents
		}
	}
	return files
}

// IgnitionStorage is what the tests read back from storage: of an Ignition
// config.
type IgnitionStorage struct {
	Storage struct {
		Files []struct {
			Path     string `json:"path"`
			Mode     *int   `json:"mode"`
			Contents struct {
				Source       *string `json:"source"`
				Compression  *string `json:"compression"`
				Verification struct {
					Hash *string `json:"hash"`
				} `json:"verification"`
			} `json:"contents"`
		} `json:"files"`
		Directories []struct {
			Path string `json:"path"`
			Mode *int   `json:"mode"`
		} `json:"directories"`
		Links []struct {
			Path   string  `json:"path"`
			Target *string `json:"target"`
			Hard   *bool   `json:"hard"`
		} `json:"links"`
	} `json:"storage"`
}

// DecodeContents returns the bytes of an inline data URL, gunzipped when
// the config says compression: gzip.
func DecodeContents(t *testing.T, source string, compression *string) []byte {
	t.Helper()
	u, err := dataurl.DecodeString(source)
	if err != nil {
		t.Fatalf("%q: %v", source, err)
	}
	if compression == nil || *compression == "" {
		return u.Data
	}
	if *compression != "gzip" {
		t.Fatalf("compression %q", *compression)
	}
	zr, err := gzip.NewReader(bytes.NewReader(u.Data))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// SameJSON fails unless a and b are the same JSON value.
func SameJSON(t *testing.T, what string, a, b []byte) {
	t.Helper()
	var av, bv any
	if err := json.Unmarshal(a, &av); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, a)
	}
	if err := json.Unmarshal(b, &bv); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, b)
	}
	if diff := cmp.Diff(av, bv); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}
