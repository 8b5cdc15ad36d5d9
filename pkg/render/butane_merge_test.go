package render_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	butane "github.com/coreos/butane/config"
	"github.com/coreos/butane/config/common"
	v34 "github.com/coreos/ignition/v2/config/v3_4"

	"github.com/hostprov/hostprov/pkg/render/ignition"
	"github.com/hostprov/hostprov/pkg/render/internal/rendertest"
)

// TestButaneMergesHostprov proves docs/outputs.md's way of adding one's own
// storage and passwd to hostprov's units without editing generated files:
// a Butane config of one's own that merges hostprov's Ignition config as a
// local file, translated by Butane with --files-dir. The merged config must
// carry hostprov's config byte for byte, and the result must be a valid
// Ignition config.
func TestButaneMergesHostprov(t *testing.T) {
	ign, err := ignition.Render(rendertest.Build(t, filepath.Join("..", "..", "examples", "swap", "hostprov.yaml")), ignition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hostprov.ign"), ign, 0o644); err != nil {
		t.Fatal(err)
	}
	own := []byte(`variant: fcos
version: 1.5.0
ignition:
  config:
    merge:
      - local: hostprov.ign
storage:
  files:
    - path: /etc/myapp/config.toml
      contents:
        inline: |
          listen = ":8080"
passwd:
  users:
    - name: myapp
`)
	out, rpt, err := butane.TranslateBytes(own, common.TranslateBytesOptions{TranslateOptions: common.TranslateOptions{FilesDir: dir}})
	if err != nil || len(rpt.Entries) > 0 {
		t.Fatalf("Butane: %v\n%s", err, rpt)
	}
	if _, rpt, err := v34.Parse(out); err != nil || len(rpt.Entries) > 0 {
		t.Fatalf("Ignition refuses the merged config: %v\n%s\n%s", err, rpt, out)
	}
	var cfg struct {
		Ignition struct {
			Config struct {
				Merge []struct {
					Source      string  `json:"source"`
					Compression *string `json:"compression"`
				} `json:"merge"`
			} `json:"config"`
		} `json:"ignition"`
	}
	if err := json.Unmarshal(out, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Ignition.Config.Merge) != 1 {
		t.Fatalf("want one merged config, got %s", out)
	}
	m := cfg.Ignition.Config.Merge[0]
	got := decodeDataURL(t, m.Source)
	if m.Compression != nil && *m.Compression == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(got))
		if err != nil {
			t.Fatal(err)
		}
		if got, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got, ign) {
		t.Errorf("the merged config is not hostprov's Ignition config:\n got %s\nwant %s", got, ign)
	}
}

// decodeDataURL decodes an RFC 2397 data URL, base64 or percent-encoded.
func decodeDataURL(t *testing.T, s string) []byte {
	t.Helper()
	meta, data, ok := strings.Cut(strings.TrimPrefix(s, "data:"), ",")
	if !ok || !strings.HasPrefix(s, "data:") {
		t.Fatalf("not a data URL: %.80s", s)
	}
	if strings.HasSuffix(meta, ";base64") {
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	b, err := url.PathUnescape(data)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(b)
}
