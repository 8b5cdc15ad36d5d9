// Package hooks reads hostprov hook specs: the YAML documents in which a
// person says what a machine needs at boot.
//
// Parsing is strict. Parse reports every problem of a spec at once, each as a
// Diagnostic with the file, line and column, the path into the document
// ("hooks[1].manifest") and a hint. It still returns what it could decode, so
// that later checks can report their problems too, but a spec with errors
// must never be rendered. Checks that need the systemd unit model (unit
// names, manifests, directives) are made by package render, which maps its
// findings back to positions in the spec with Spec.Where and
// Spec.WhereInScalar.
//
// Hooks are a superset of kops's HookSpec: the kops fields (name, manifest,
// useRawManifest, requires, before, enabled) mean what they mean in kops.
package hooks

// specAPIVersion and specKind identify a hostprov hook spec document.
const (
	specAPIVersion = "hostprov/v1alpha1"
	specKind       = "Hooks"
)

// Spec is a parsed hook spec.
type Spec struct {
	APIVersion string
	Kind       string
	// Name is metadata.name: the spec set that owns the spec's units on
	// a node. Empty when not given; the spec is then the set named after
	// its file.
	Name string
	// Hooks[i] is the entry written as hooks[i], so that "hooks[i]" is its
	// path. An entry that is not a mapping is reported and kept as a zero
	// Hook, which has no name.
	Hooks []Hook

	// File is the name the spec was read from, as given to Parse; it is
	// the file part of every Position.
	File string

	// pos maps document paths ("hooks[0].exec[2]") to where their value
	// starts. Keys of mappings are recorded under the path of the key's
	// value, so "hooks[0].env.PATH" is where that variable's value starts.
	// It also records, for block scalars ("|" and ">") and quoted
	// scalars, where each line of the decoded string starts in the
	// source, because neither starts where the node does: a block
	// scalar's text begins on the line after its indicator, a quoted one
	// after its quote.
	pos positions
}

// Hook is one entry of a spec's hooks list. A hook becomes at most one unit
// file plus its drop-ins.
//
// There are four kinds of hook:
//   - raw: UseRawManifest is set, Manifest is the whole unit file, used as
//     written;
//   - generated: the structured fields (Exec, Env, Type, ...), the body of the
//     type's own section in Manifest (kops's meaning: for a service, the body of
//     [Service]) and Directives become a canonical unit;
//   - drop-in only: only Dropins (and Enabled/Mask) are set; the drop-ins
//     extend a unit that exists on the machine already;
//   - mask only: Mask is set and there is no body; the unit is masked.
type Hook struct {
	// Name is the unit's name. Without UseRawName, ".service" is appended
	// unless the name already ends in a unit type suffix (kops's rule).
	Name        string
	Description string
	// Enabled says whether the unit is enabled (linked from its [Install]
	// targets). Nil means true.
	Enabled *bool
	// Mask masks the unit (links it to /dev/null) so that nothing starts it.
	Mask bool
	// UseRawName keeps Name exactly as written; it must then be a valid unit
	// name with a type suffix.
	UseRawName bool
	// UseRawManifest means Manifest is the whole unit file, used as written.
	UseRawManifest bool
	// Manifest is, without UseRawManifest, the body of the unit type's own
	// section ([Service] for services); with it, the whole unit file.
	Manifest string
	// ExactBytes writes the raw manifest and the drop-ins byte for byte:
	// without it, their line endings become LF and each ends with one
	// newline. systemd reads both the same; it is for a unit that must be
	// the same bytes as elsewhere, such as one imported from a config
	// that has it so (the bytes are then the config's in every output).
	ExactBytes bool

	// Dependencies and ordering, written to [Unit].
	Requires []string
	Wants    []string
	Before   []string
	After    []string
	// WantedBy is written to [Install]. Nil means the unit type's usual
	// target when the hook is enabled; an empty, non-nil list (wantedBy: [])
	// means no WantedBy= at all.
	WantedBy []string

	// Service fields. They are only valid for services.
	Type string
	// Exec is the main command as an argument list (ExecStart=).
	Exec []string
	// Pre are commands run before Exec, in order (ExecStartPre=).
	Pre [][]string
	// ExpandEnv lets systemd expand $VAR and ${VAR} in Exec and Pre (a $VAR
	// inside a word is rendered as ${VAR}, which systemd expands there);
	// without it every "$" reaches the command as written.
	ExpandEnv bool
	// Specifiers lets systemd expand its %-specifiers (%i, %n, %H, ...) in
	// every structured value; without it every "%" is written as "%%" and
	// reaches the unit's process as written. Templates need it for %i.
	Specifiers       bool
	RemainAfterExit  *bool
	Env              map[string]string
	EnvironmentFile  string
	WorkingDirectory string
	User             string
	Group            string
	Restart          string
	RestartSec       string
	TimeoutStartSec  string
	TimeoutStopSec   string

	// StateDirectory, LogsDirectory and ConfigurationDirectory name
	// directories under /var/lib, /var/log and /etc that systemd creates,
	// owned by User, before the service starts (StateDirectory= and so on),
	// so that a process does not fail on a directory it cannot write.
	StateDirectory         string
	LogsDirectory          string
	ConfigurationDirectory string

	// Steps are commands run in order, once each, stopping at the first
	// that fails; they make the hook a command hook: a Type=oneshot
	// service with RemainAfterExit=yes and one ExecStart= per step.
	Steps []Step
	// When says when a command hook runs: WhenOnce, WhenAlways or
	// WhenNever. Empty means WhenOnce.
	When string

	// DeviceTimeout is how long systemd waits for the device of a .mount
	// or .swap hook (its What=, under /dev) to appear: rendered as a
	// JobRunningTimeoutSec= drop-in for that .device unit, as fstab's
	// x-systemd.device-timeout= is. Without it systemd waits 90 s, too
	// short for a device that a first-boot hook creates on a slow machine.
	DeviceTimeout string

	// Directives are extra Key=Value entries per section ("Unit",
	// "Service", "Install", ...), kept in the order written.
	Directives map[string][]string

	// Dropins are written as NAME.d/<Dropin.Name>.
	Dropins []Dropin

	// Files, Directories and Links are what the hook needs on the
	// machine besides its unit, such as its configuration file. They are
	// written before the hook's unit starts.
	Files       []File
	Directories []Directory
	Links       []Link
	// Users and Groups are accounts the hook needs: created, before its
	// files are written and its unit starts, when the machine lacks them.
	Users  []User
	Groups []Group

	// Disruption is what a change of the hook does to the machine's
	// workloads: DisruptionNone, DisruptionDrain or DisruptionReboot.
	// Empty means DisruptionNone.
	Disruption string
}

// Step is one command of a command hook. Exactly one of Run and Sh is set.
type Step struct {
	// Name identifies the step in status output.
	Name string
	// Run is the command as an argument list.
	Run []string
	// Sh is a shell script, run with /bin/sh -ec: it stops at the first
	// command that fails. It may span several lines.
	Sh string
}

// When values of a command hook.
const (
	// WhenOnce runs the steps once per content: a stamp named by the hash
	// of the rendered unit is written after they succeed, and the unit is
	// skipped while it exists, so a changed hook runs again.
	WhenOnce = "Once"
	// WhenAlways runs the steps at every boot (and on every apply that
	// changes them).
	WhenAlways = "Always"
	// WhenNever renders the hook but neither enables nor starts it.
	WhenNever = "Never"
)

// Disruption values of a hook. They tell whoever applies the hook what a
// change of it does to the machine; hostprov apply reports them, the
// Kubernetes agent acts on them.
const (
	// DisruptionNone: the hook is applied while workloads run.
	DisruptionNone = "None"
	// DisruptionDrain: the machine's workloads are moved away (the node is
	// cordoned and drained) before the hook is applied or removed, and
	// come back after.
	DisruptionDrain = "Drain"
	// DisruptionReboot: as Drain, and the machine reboots after the hook
	// is applied, before workloads come back.
	DisruptionReboot = "Reboot"
)

// NeedsDrain reports whether changing the hook needs the machine drained.
func (h *Hook) NeedsDrain() bool {
	return h.Disruption == DisruptionDrain || h.Disruption == DisruptionReboot
}

// Dropin is a drop-in file for a hook's unit.
type Dropin struct {
	// Name is the file name inside NAME.d/; it ends in ".conf".
	Name string
	// Contents is the drop-in's text, used as written (line endings become
	// LF and the file ends with one newline, unless the hook's ExactBytes).
	Contents string
}

// IsEnabled reports whether the hook's unit is to be enabled: unless
// enabled: false, or a command hook that is to run never.
func (h *Hook) IsEnabled() bool {
	return (h.Enabled == nil || *h.Enabled) && h.When != WhenNever
}

// HasStorage reports whether the hook puts files, directories, links,
// users or groups on the machine. A hook that does nothing else renders no
// unit.
func (h *Hook) HasStorage() bool {
	return len(h.Files)+len(h.Directories)+len(h.Links)+len(h.Users)+len(h.Groups) > 0
}

// Generated reports whether the hook is of the generated kind: whether
// any field that makes unit content is set, so that the hook renders to a
// unit file of its own. A hook that is not raw and not generated only adds
// drop-ins to, enables or masks a unit of the machine. The fields that
// make unit content are those of the schema's role content.
func (h *Hook) Generated() bool {
	for i := range hookKind.fields {
		if f := &hookKind.fields[i]; f.roles&content != 0 && f.isSet(h) {
			return true
		}
	}
	return false
}

// File is an entry of a hook's files: a file the hook needs on the
// machine, such as its service's configuration. Exactly one of Contents,
// Local and Source gives its bytes.
type File struct {
	// Path is where the file goes: absolute and normalised, without "..".
	Path string
	// Contents is the file's text, written inline; nil when not given, so
	// that contents: "" (an empty file) is told apart from no contents.
	Contents *string
	// Local names a file relative to the spec's directory (never outside
	// it), read when the spec is rendered.
	Local string
	// Source is a URL to fetch the file from (https:// or s3://, as
	// Ignition accepts). It needs Hash.
	Source string
	// Hash is verification.hash: "sha256-HEX" or "sha512-HEX", the digest
	// the file's bytes must have.
	Hash string
	// Mode is the file's permission bits, written in octal; nil means
	// the default, 0644.
	Mode *uint32
	// User and Group own the file: a name or a decimal id. Empty means
	// root.
	User  string
	Group string
	// Overwrite replaces a file of another origin that is at Path already;
	// without it such a file is an error (as in Ignition).
	Overwrite bool
}

// Directory is an entry of a hook's directories.
type Directory struct {
	// Path is absolute and normalised, without "..".
	Path string
	// Mode is the permission bits, written in octal; nil means 0755.
	Mode *uint32
	// User and Group own the directory: a name or a decimal id. Empty
	// means root.
	User  string
	Group string
}

// Link is an entry of a hook's links.
type Link struct {
	// Path is where the link is: absolute and normalised, without "..".
	Path string
	// Target is what the link points to. For a symbolic link it may be
	// relative (to the link's directory); a hard link's target is an
	// absolute path.
	Target string
	// Hard makes a hard link instead of a symbolic one.
	Hard bool
	// User and Group own a symbolic link itself (lchown): a name or a
	// decimal id; empty means root. A hard link has no owner of its own.
	User  string
	Group string
	// Overwrite replaces what is at Path already, which is otherwise a
	// conflict (apply) or a failed boot (Ignition).
	Overwrite bool
}

// Default modes of files and directories that give none.
const (
	DefaultFileMode      uint32 = 0o644
	DefaultDirectoryMode uint32 = 0o755
)
