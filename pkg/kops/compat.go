package kops

import (
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/hostprov/hostprov/pkg/compile"
)

// Runtime is the container runtime an execContainer hook runs its image
// with.
type Runtime string

const (
	// Containerd is what kops nodeup uses today: ctr in the k8s.io
	// namespace.
	Containerd Runtime = "containerd"
	// Docker is what kops nodeup used before kops 1.28 on clusters with
	// containerRuntime: docker (docker run).
	Docker Runtime = "docker"
)

// Task is what kops nodeup does with the unit of one hook (a
// nodetasks.Service): write the unit file, enable it, start it.
type Task struct {
	// Unit is the unit as hostprov's outputs take it: Contents is the
	// file kops writes, byte for byte, and nil for a disabled hook, of
	// which kops writes no file; Enabled is kops's enabled flag. Hook is
	// the index of the NodeHook the task comes from.
	compile.Unit
	// Running says whether nodeup starts the unit (true) or stops it
	// (false).
	Running bool
	// ManageState says that nodeup makes the unit's enabled and running
	// state what the task says; it is true for every hook.
	ManageState bool
	// SmartRestart says that nodeup restarts the unit when its file
	// changed; kops sets it for every hook it renders, not for disabled
	// ones.
	SmartRestart bool
}

// RenderCompat renders hooks exactly as kops nodeup does (kops 1.28 and
// later with Containerd, earlier kops with Docker): the same unit names,
// the same bytes, the same enabled and running flags, and no task for a
// hook that nodeup skips (one with neither manifest nor execContainer, or
// an execContainer without an image, which Read reports as errors).
//
// A disabled hook is a task without contents that stops and disables the
// unit of its name. A raw manifest is the file as written, without even a
// final newline added. Otherwise the unit is kops's systemd.Manifest: a
// [Unit] section with Description=Kops Hook NAME, one Requires= and Before=
// line per entry, and either the manifest pasted after a [Service] header,
// or, for an execContainer, the container runtime's pull and run commands.
//
// kops writes an execContainer's environment as --env options in Go's map
// order, which differs from run to run; RenderCompat sorts them by name,
// which is one of the orders kops writes.
//
// The hooks must come from a Read without errors; RenderCompat fails only
// for an unknown runtime.
func RenderCompat(hs []NodeHook, rt Runtime) ([]Task, error) {
	if rt != Containerd && rt != Docker {
		return nil, fmt.Errorf("unknown container runtime %q: use %s or %s", rt, Containerd, Docker)
	}
	var out []Task
	for i, h := range hs {
		name := h.UnitName()
		if !h.IsEnabled() {
			out = append(out, Task{Unit: compile.Unit{Name: name, Enabled: boolPtr(false), Hook: i, HookName: h.Name, Pos: h.Where("")}, ManageState: true})
			continue
		}
		ec := h.ExecContainer
		if ec == nil && h.Manifest == "" {
			continue // nodeup: "has neither a raw unit or exec image configured"
		}
		if ec != nil && strings.TrimSpace(ec.Image) == "" {
			continue // nodeup: "invalid hook action"
		}
		var def string
		if h.UseRawManifest {
			def = h.Manifest
		} else {
			var u kopsUnit
			u.set("Unit", "Description", "Kops Hook "+h.Name)
			for _, x := range h.Requires {
				u.set("Unit", "Requires", x)
			}
			for _, x := range h.Before {
				u.set("Unit", "Before", x)
			}
			if ec == nil {
				u.section("Service").body = h.Manifest
			} else {
				image := strings.TrimSpace(ec.Image)
				pull, run, requires := containerCommands(rt, image, h.Name, ec, true)
				u.set("Unit", "Requires", requires)
				u.set("Service", "ExecStartPre", escapeCommand(pull))
				u.set("Service", "ExecStart", escapeCommand(run))
				u.set("Service", "Type", "oneshot")
				u.set("Install", "WantedBy", "multi-user.target")
			}
			def = u.render()
		}
		out = append(out, Task{
			Unit:         compile.Unit{Name: name, Contents: []byte(def), Enabled: boolPtr(true), Hook: i, HookName: h.Name, Pos: h.Where("")},
			Running:      true,
			ManageState:  true,
			SmartRestart: true,
		})
	}
	return out, nil
}

func boolPtr(b bool) *bool { return &b }

// containerCommands returns the commands that pull and run an
// execContainer's image the way kops nodeup does, and the runtime's unit.
// image is the image as written (trimmed); the containerd commands use
// kops's normalised reference. withName adds the hook's name as ctr's
// container ID, as kops does.
func containerCommands(rt Runtime, image, name string, ec *ExecContainer, withName bool) (pull, run []string, requires string) {
	ref, pull, requires := image, []string{"/usr/bin/docker", "pull", image}, "docker.service"
	run = []string{
		"/usr/bin/docker", "run",
		"-v", "/:/rootfs/",
		"-v", "/var/run/dbus:/var/run/dbus",
		"-v", "/run/systemd:/run/systemd",
		"--net=host",
		"--privileged",
	}
	if rt != Docker {
		ref = containerdImage(image)
		pull, requires = []string{"/usr/bin/ctr", "--namespace", "k8s.io", "image", "pull", ref}, "containerd.service"
		run = []string{
			"/usr/bin/ctr", "--namespace", "k8s.io", "run", "--rm",
			"--mount", "type=bind,src=/,dst=/rootfs,options=rbind:rslave",
			"--mount", "type=bind,src=/var/run/dbus,dst=/var/run/dbus,options=rbind:rprivate",
			"--mount", "type=bind,src=/run/systemd,dst=/run/systemd,options=rbind:rprivate",
			"--net-host",
			"--privileged",
		}
	}
	run = append(run, envArgs(ec.Environment)...)
	run = append(run, ref)
	// docker run names no container; ctr run takes the ID after the image.
	if withName && rt != Docker {
		run = append(run, name)
	}
	return pull, append(run, ec.Command...), requires
}

// containerdImage is the image reference kops gives ctr for an image as
// written: docker.io/library/ before a name without "/", and :latest
// after one without ":". Like kops, it does not look further: a registry
// host with a port ("localhost:5000/x") gets no tag.
func containerdImage(image string) string {
	if !strings.Contains(image, "/") {
		image = "docker.io/library/" + image
	}
	if !strings.Contains(image, ":") {
		image += ":latest"
	}
	return image
}

// envArgs are the --env options of an execContainer's environment, sorted
// by name.
func envArgs(env map[string]string) []string {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		out = append(out, "--env", k+"="+env[k])
	}
	return out
}

// kopsUnit is the unit file model of kops's pkg/systemd.Manifest, whose
// bytes RenderCompat must reproduce: sections in the order first used,
// each "[Name]\n", then its raw body as given, then its "Key=Value\n"
// entries in the order set, and one empty line between sections.
type kopsUnit struct {
	sections []*kopsSection
}

type kopsSection struct {
	name    string
	body    string
	entries []string
}

func (u *kopsUnit) section(name string) *kopsSection {
	for _, s := range u.sections {
		if s.name == name {
			return s
		}
	}
	s := &kopsSection{name: name}
	u.sections = append(u.sections, s)
	return s
}

func (u *kopsUnit) set(section, key, value string) {
	s := u.section(section)
	s.entries = append(s.entries, key+"="+value+"\n")
}

// render writes the unit as kops does. A body that does not end in a
// newline runs into what follows, and the file then ends without one:
// kops adds nothing.
func (u *kopsUnit) render() string {
	var b strings.Builder
	for i, s := range u.sections {
		b.WriteString("[" + s.name + "]\n")
		b.WriteString(s.body)
		for _, e := range s.entries {
			b.WriteString(e)
		}
		if i < len(u.sections)-1 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// escapeCommand joins argv the way kops's systemd.EscapeCommand does. It
// is not systemd's quoting: '%' and '$' pass unescaped (systemd expands
// them), and an argument is double-quoted only when it holds a space.
// Letters, digits and the punctuation kops allows are kept; the double
// quote, the single quote and the backslash get a backslash; every other
// byte (a tab, a newline, any byte of a multi-byte UTF-8 character) becomes
// \xNN.
func escapeCommand(argv []string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = escapeArg(a)
	}
	return strings.Join(words, " ")
}

func escapeArg(s string) string {
	var b strings.Builder
	quote := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			strings.IndexByte("!#$%&()*+,-./:;<=>?@[]^_`{|}~", c) >= 0:
			b.WriteByte(c)
		case c == ' ':
			quote = true
			b.WriteByte(c)
		case c == '"' || c == '\'' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteString(`\x` + hex.EncodeToString([]byte{c}))
		}
	}
	if quote {
		return `"` + b.String() + `"`
	}
	return b.String()
}
