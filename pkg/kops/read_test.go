package kops_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/kops"
)

// diagLines formats diagnostics as "line:col severity path: message".
func diagLines(ds hooks.Diagnostics) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "%d:%d %s %s: %s\n", d.Pos.Line, d.Pos.Column, d.Severity, d.Path, d.Message)
	}
	return b.String()
}

// readDiagnosticCases are kops manifests and what Read says of them.
var readDiagnosticCases = []struct {
	name string
	src  string
	want string // each line a prefix of one diagnostic line, in order
	hint string // a substring of some hint
}{{
	name: "unknown field with did-you-mean (kops issue 3357)",
	src: `apiVersion: kops.k8s.io/v1alpha2
kind: Cluster
spec:
  hooks:
  - name: update-engine.service
    disable: true
`,
	want: "6:5 error spec.hooks[0].disable: unknown field \"disable\" in a hook",
	hint: "did you mean disabled?",
}, {
	name: "v1alpha3 spelling in v1alpha2",
	src: `apiVersion: kops.k8s.io/v1alpha2
kind: Cluster
spec:
  hooks:
  - name: update-engine.service
    enabled: false
`,
	want: "6:5 error spec.hooks[0].enabled: enabled is not a hook field in kops.k8s.io/v1alpha2",
	hint: "write disabled: true",
}, {
	name: "v1alpha2 spelling in v1alpha3",
	src: `apiVersion: kops.k8s.io/v1alpha3
kind: Cluster
spec:
  hooks:
  - name: update-engine.service
    disabled: true
`,
	want: "6:5 error spec.hooks[0].disabled: disabled is not a hook field in kops.k8s.io/v1alpha3",
	hint: "write enabled: false",
}, {
	name: "v1alpha3 spelling in a v1alpha2 InstanceGroup: disabled: true would run it",
	src: `apiVersion: kops.k8s.io/v1alpha2
kind: InstanceGroup
metadata:
  name: nodes
spec:
  role: Node
  hooks:
  - name: update-engine.service
    enabled: false
`,
	want: "9:5 error spec.hooks[0].enabled: enabled is not a hook field in kops.k8s.io/v1alpha2",
	hint: "write the InstanceGroup as kops.k8s.io/v1alpha3 with enabled: false, or disable the hook in the Cluster spec",
}, {
	name: "no manifest in a v1alpha2 InstanceGroup with disabled: true",
	src: `apiVersion: kops.k8s.io/v1alpha2
kind: InstanceGroup
metadata:
  name: nodes
spec:
  role: Node
  hooks:
  - name: update-engine.service
    disabled: true
`,
	want: "8:5 error spec.hooks[0]: the hook has neither a manifest nor an execContainer\n9:5 warning spec.hooks[0].disabled: disabled: true in a v1alpha2 InstanceGroup",
	hint: "or, to stop a unit of the image, write the InstanceGroup as kops.k8s.io/v1alpha3 with enabled: false",
}, {
	name: "no manifest in a v1alpha3 Cluster",
	src: `apiVersion: kops.k8s.io/v1alpha3
kind: Cluster
spec:
  hooks:
  - name: update-engine.service
`,
	want: "5:5 error spec.hooks[0]: the hook has neither a manifest nor an execContainer",
	hint: "or, to stop a unit of the image, write enabled: false",
}, {
	name: "a disabled v1alpha2 Cluster hook with a manifest",
	src: `apiVersion: kops.k8s.io/v1alpha2
kind: Cluster
spec:
  hooks:
  - name: update-engine.service
    disabled: true
    manifest: ExecStart=/bin/true
`,
	want: "7:15 warning spec.hooks[0].manifest: the hook is disabled, so kops ignores its manifest",
	hint: "remove manifest, or remove disabled: true",
}, {
	name: "duplicate hooks keys",
	src: `apiVersion: kops.k8s.io/v1alpha2
kind: Cluster
spec:
  hooks:
  - name: a.service
    manifest: "ExecStart=/bin/true"
  hooks:
  - name: b.service
    manifest: "ExecStart=/bin/true"
`,
	want: "7:3 error : hooks is given twice in this mapping (first on line 4)",
	hint: "kops keeps only the last hooks (line 7)",
}, {
	name: "misplaced useRawManifest",
	src: `apiVersion: kops.k8s.io/v1alpha2
kind: Cluster
spec:
  hooks:
  - name: boot.service
    manifest: |
      [Unit]
      Description=x
  useRawManifest: true
`,
	want: "9:3 error spec.useRawManifest: useRawManifest is a field of a hook, not of the Cluster spec",
	hint: "indent it to column 5, under the hook that starts on line 5",
}, {
	name: "raw manifest with before, requires and execContainer",
	src: `apiVersion: kops.k8s.io/v1alpha3
kind: Cluster
spec:
  hooks:
  - name: x.service
    useRawManifest: true
    before: [kubelet.service]
    requires: [docker.service]
    execContainer: {image: busybox}
`,
	want: "6:21 error spec.hooks[0].useRawManifest: useRawManifest is set, but the hook has no manifest\n" +
		"7:13 error spec.hooks[0].before: before may not be used with useRawManifest\n" +
		"8:15 error spec.hooks[0].requires: requires may not be used with useRawManifest\n" +
		"9:20 error spec.hooks[0].execContainer: execContainer may not be used with useRawManifest",
}, {
	name: "neither manifest nor execContainer",
	src: `apiVersion: kops.k8s.io/v1alpha3
kind: Cluster
spec:
  hooks:
  - name: x.service
    before: [kubelet.service]
`,
	want: "5:5 error spec.hooks[0]: the hook has neither a manifest nor an execContainer",
}, {
	name: "instance group v1alpha2 disabled",
	src: `apiVersion: kops.k8s.io/v1alpha2
kind: InstanceGroup
metadata:
  name: nodes
spec:
  role: Node
  hooks:
  - name: update-engine.service
    disabled: true
`,
	// kops reads the hook as enabled, and then refuses it.
	want: "8:5 error spec.hooks[0]: the hook has neither a manifest nor an execContainer\n" +
		"9:5 warning spec.hooks[0].disabled: disabled: true in a v1alpha2 InstanceGroup means the opposite to kops",
	hint: "kops.k8s.io/v1alpha3 with enabled:",
}, {
	name: "roles",
	src: `apiVersion: kops.k8s.io/v1alpha3
kind: Cluster
spec:
  hooks:
  - name: x.service
    roles: [Master, node]
    manifest: "ExecStart=/bin/true"
`,
	want: "6:13 error spec.hooks[0].roles[0]: Master is v1alpha2's name of the role\n" +
		"6:21 error spec.hooks[0].roles[1]: \"node\" is not a kops instance group role",
	hint: "did you mean Node?",
}, {
	name: "wrong types",
	src: `apiVersion: kops.k8s.io/v1alpha3
kind: Cluster
spec:
  hooks:
  - name: x.service
    before: kubelet.service
    execContainer:
      image: busybox
      command: sh -c true
      environment: [A=1]
      imgae: busybox
`,
	want: "6:13 error spec.hooks[0].before: before must be a list of unit names, not a string\n" +
		"9:16 error spec.hooks[0].execContainer.command: command must be a list of arguments, not a string\n" +
		"10:20 error spec.hooks[0].execContainer.environment: environment must be a mapping of names to values, not a list\n" +
		"11:7 error spec.hooks[0].execContainer.imgae: unknown field \"imgae\" in an execContainer",
	hint: `write command: ["sh", "-c", "true"]`,
}, {
	name: "manifest ignored beside execContainer; empty image",
	src: `apiVersion: kops.k8s.io/v1alpha3
kind: Cluster
spec:
  hooks:
  - execContainer:
      image: " "
    manifest: ExecStart=/bin/true
`,
	want: "6:14 error spec.hooks[0].execContainer.image: the execContainer has no image\n" +
		"7:15 error spec.hooks[0].manifest: with execContainer, kops ignores the manifest",
}, {
	name: "duplicate names, path names",
	src: `apiVersion: kops.k8s.io/v1alpha3
kind: Cluster
spec:
  hooks:
  - name: a
    manifest: ExecStart=/bin/true
  - name: a
    manifest: ExecStart=/bin/true
  - name: ../evil
    manifest: ExecStart=/bin/true
`,
	want: "7:11 error spec.hooks[1].name: there is already a hook named \"a\" in this list (line 5)\n" +
		"9:11 error spec.hooks[2].name: hook name \"../evil\" looks like a path",
}, {
	name: "not a kops manifest",
	src:  "spec:\n  hooks: []\n",
	want: "1:1 error : this document has no apiVersion and kind, so it is not a kops manifest",
}, {
	name: "other kinds and groups are skipped",
	src:  "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: kops.k8s.io/v1alpha2\nkind: SSHCredential\nspec: {x: 1}\n",
	want: "",
}, {
	name: "unsupported version",
	src:  "apiVersion: kops.k8s.io/v1alpha1\nkind: Cluster\n",
	want: "1:13 error apiVersion: apiVersion \"kops.k8s.io/v1alpha1\" is not one hostprov reads",
}, {
	name: "syntax error",
	src:  "apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\nspec:\n  hooks:\n  - name: [\n",
	want: "5:0 error : the file is not valid YAML",
}, {
	// yaml.v3 gives no line for a character it refuses.
	name: "C1 control in a value",
	src:  "apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\nspec:\n  hooks:\n  - name: caf\u00e9\u0092.service\n",
	want: "5:15 error : the file is not valid YAML: the C1 control character U+0092",
	hint: `write it as an escape in a double-quoted string: "\x92"`,
}, {
	name: "NUL in a value",
	src:  "apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\nspec:\n  hooks:\n  - name: a\x00.service\n",
	want: "5:12 error : the file is not valid YAML: the control character U+0000",
	hint: `"\0"`,
}, {
	name: "invalid UTF-8 in a value",
	src:  "apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\nspec:\n  hooks:\n  - name: caf\xe9.service\n",
	want: "5:14 error : the file is not valid YAML: byte 0xe9 is not UTF-8",
	hint: "convert the file to UTF-8",
}}

func TestReadDiagnostics(t *testing.T) {
	for _, c := range readDiagnosticCases {
		t.Run(c.name, func(t *testing.T) {
			_, diags := kops.Read("c.yaml", []byte(c.src))
			got := diagLines(diags)
			var want []string
			if c.want != "" {
				want = strings.Split(c.want, "\n")
			}
			lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
			if got == "" {
				lines = nil
			}
			if len(lines) != len(want) {
				t.Fatalf("got %d diagnostics, want %d:\n%s", len(lines), len(want), got)
			}
			for i := range want {
				if !strings.HasPrefix(lines[i], want[i]) {
					t.Errorf("diagnostic %d:\n got %s\nwant %s...", i, lines[i], want[i])
				}
			}
			if c.hint != "" && !strings.Contains(fmt.Sprint(diags), c.hint) {
				t.Errorf("no hint says %q:\n%v", c.hint, diags)
			}
			for _, d := range diags {
				if d.Pos.File != "c.yaml" {
					t.Errorf("diagnostic without its file: %v", d)
				}
			}
		})
	}
}

// TestReadEnablement checks what kops's conversions make of disabled and
// enabled, for each kind and version.
func TestReadEnablement(t *testing.T) {
	for _, c := range []struct {
		version, kind, field string
		value                bool
		enabled              bool
	}{
		{kops.V1Alpha2, "Cluster", "disabled", true, false},
		{kops.V1Alpha2, "Cluster", "disabled", false, true},
		{kops.V1Alpha3, "Cluster", "enabled", false, false},
		{kops.V1Alpha3, "InstanceGroup", "enabled", false, false},
		// kops does not invert disabled for v1alpha2 InstanceGroups.
		{kops.V1Alpha2, "InstanceGroup", "disabled", true, true},
		{kops.V1Alpha2, "InstanceGroup", "disabled", false, false},
	} {
		src := fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata: {name: g}\nspec:\n  role: Node\n  hooks:\n  - name: u.service\n    manifest: ExecStart=/bin/true\n    %s: %t\n",
			c.version, c.kind, c.field, c.value)
		ms, diags := kops.Read("c.yaml", []byte(src))
		if diags.HasErrors(false) {
			t.Fatal(diags)
		}
		m := ms.Cluster
		if c.kind == "InstanceGroup" {
			m = ms.InstanceGroups[0]
		}
		if got := m.Hooks[0].IsEnabled(); got != c.enabled {
			t.Errorf("%s %s %s: %t: enabled %t, kops %t", c.version, c.kind, c.field, c.value, got, c.enabled)
		}
	}
}

// TestDocsDuplicateHooks reads the kops docs example with five hooks: keys
// in one mapping: each but the last is an error at its line, because kops
// would render only the last list.
func TestDocsDuplicateHooks(t *testing.T) {
	needCorpus(t)
	data := append([]byte("apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\n"),
		readCorpus(t, "docs/cluster_spec.ex0-all-variants-DUPLICATE-hooks-keys.yaml")...)
	ms, diags := kops.Read("ex0.yaml", data)
	var dups []int
	for _, d := range diags {
		if strings.HasPrefix(d.Message, "hooks is given twice") {
			dups = append(dups, d.Pos.Line)
		}
	}
	// With the two lines of apiVersion and kind, the hooks: keys are on
	// lines 7, 20, 32, 47 and 52.
	if fmt.Sprint(dups) != "[20 32 47 52]" {
		t.Errorf("duplicate hooks: keys reported on lines %v\n%v", dups, diags)
	}
	if len(ms.Cluster.Hooks) != 1 || ms.Cluster.Hooks[0].Name != "disable-update-engine.service" {
		t.Errorf("kops keeps the last hooks: list; got %+v", ms.Cluster.Hooks)
	}
}

// TestCorpusDocs reads every kops docs excerpt, to be sure that each either
// reads or fails with a positioned reason.
func TestCorpusDocs(t *testing.T) {
	needCorpus(t)
	for _, f := range []string{
		"docs/gpu.md-2017.ex-execContainer-image-only.yaml",
		"docs/nvidia-device-plugin.README.ex-ig-hooks.yaml",
	} {
		data := append([]byte("apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\n"), readCorpus(t, f)...)
		_, diags := kops.Read(f, data)
		if !diags.HasErrors(false) {
			t.Errorf("%s: want an error (a '...' document end, two spec: keys)", f)
		}
		for _, d := range diags {
			if d.Pos.Line == 0 {
				t.Errorf("%s: unpositioned: %v", f, d)
			}
		}
	}
}
