package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// HostHooks is a hook spec for the nodes a label selector matches: each
// matching node applies its hooks as one spec set, named after the
// HostHooks, and reports in a NodeHooks.
//
// Whoever may create a HostHooks may run commands as root on every node it
// selects: see the project's SECURITY.md.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=hh,categories=hostprov
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Matched",type=integer,JSONPath=`.status.matchedNodes`
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updatedNodes`
// +kubebuilder:printcolumn:name="Succeeded",type=integer,JSONPath=`.status.succeededNodes`
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.failedNodes`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 200",message="the name of a HostHooks is at most 200 characters: it names a spec set on every node"
type HostHooks struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   HostHooksSpec   `json:"spec"`
	Status HostHooksStatus `json:"status,omitempty"`
}

// HostHooksSpec says what the nodes get and how a change reaches them.
type HostHooksSpec struct {
	// NodeSelector selects the nodes, by their labels. Unset or empty
	// selects every node.
	// +optional
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`
	// Rollout says how fast a change of hooks reaches the nodes.
	// +optional
	Rollout Rollout `json:"rollout,omitempty"`
	// PruneTimeoutSeconds is how long deleting the HostHooks waits for
	// the agents to remove its units from their nodes. Then the nodes
	// whose agent has not are reported orphaned (in the Progressing
	// condition and an event), and the HostHooks goes: their units stay
	// until their agent runs again. Default 900.
	// +optional
	// +kubebuilder:validation:Minimum=1
	PruneTimeoutSeconds *int32 `json:"pruneTimeoutSeconds,omitempty"`
	// Retry is a counter to increase (hostprov retry does) to start
	// again the hooks whose start failed, on every node that is approved
	// for the current hooks, applied them and failed: once per change
	// its agent sees, however large. It is not part of the hooks' hash:
	// nothing rolls out, and nodes that succeeded, or have not applied
	// the current hooks yet, are left as they are. Default 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Retry int32 `json:"retry,omitempty"`
	// Hooks is exactly a hook spec's hooks list: the same fields (but a
	// file's local:, as File says), checked by the same validation (at
	// admission), rendered to the same units, files and accounts.
	// +kubebuilder:validation:MinItems=1
	// +listType=atomic
	Hooks []Hook `json:"hooks"`
}

// Rollout limits how many nodes apply a change of hooks at a time.
type Rollout struct {
	// MaxUnavailable is how many matched nodes may be unavailable at
	// once: approved for the current hooks and not done applying them
	// (a node that failed them is done: FailureThreshold counts it), or
	// not Ready, or unavailable for another HostHooks that selects it
	// (the budget is shared by every HostHooks on the same nodes), and
	// nodes that left the selector while they remove the hooks. A count
	// or a percentage of the matched nodes (rounded down, at least 1). A
	// node is approved for the current hooks, or to remove them, only
	// while fewer are. Default 1.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^[1-9][0-9]?%$|^100%$')",message="must be a count of at least 1 or a percentage from 1% to 100%"
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// Pause stops approving nodes for the current hooks; the nodes that
	// are approved already go on.
	// +optional
	Pause bool `json:"pause,omitempty"`
	// FailureThreshold is how many nodes may fail the current hooks before
	// the rollout stops: with more failed nodes than this, no further
	// node is approved until the hooks change, or until a retry
	// (spec.retry) makes enough of them succeed. Default 0: the first
	// failure stops it.
	// +optional
	// +kubebuilder:validation:Minimum=0
	FailureThreshold *int32 `json:"failureThreshold,omitempty"`
	// ProgressDeadlineSeconds is how long a node may take: from its
	// NodeHooks' creation to its agent's first report, and from its
	// approval to having applied the current hooks; and how long it may
	// be not Ready. A node past it holds the rollout, and the Stalled
	// condition names it. Default 600.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`
}

// Hook is one entry of a hook spec's hooks list; the hook spec reference in
// the project's README says what each field means. The JSON names are
// the hook spec's.
type Hook struct {
	// +kubebuilder:validation:MinLength=1
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// +optional
	Enabled        *bool  `json:"enabled,omitempty"`
	Mask           bool   `json:"mask,omitempty"`
	UseRawName     bool   `json:"useRawName,omitempty"`
	UseRawManifest bool   `json:"useRawManifest,omitempty"`
	Manifest       string `json:"manifest,omitempty"`
	ExactBytes     bool   `json:"exactBytes,omitempty"`

	// +listType=atomic
	Requires []string `json:"requires,omitempty"`
	// +listType=atomic
	Wants []string `json:"wants,omitempty"`
	// +listType=atomic
	Before []string `json:"before,omitempty"`
	// +listType=atomic
	After []string `json:"after,omitempty"`
	// WantedBy unset means the unit type's usual target; an empty list
	// means no WantedBy= at all.
	// +optional
	// +listType=atomic
	WantedBy *[]string `json:"wantedBy,omitempty"`

	// +kubebuilder:validation:Enum=simple;exec;forking;oneshot;dbus;notify;notify-reload;idle
	Type string `json:"type,omitempty"`
	// +listType=atomic
	Exec []string `json:"exec,omitempty"`
	// +listType=atomic
	Pre              [][]string        `json:"pre,omitempty"`
	ExpandEnv        bool              `json:"expandEnv,omitempty"`
	Specifiers       bool              `json:"specifiers,omitempty"`
	RemainAfterExit  *bool             `json:"remainAfterExit,omitempty"`
	Env              map[string]string `json:"env,omitempty"`
	EnvironmentFile  string            `json:"environmentFile,omitempty"`
	WorkingDirectory string            `json:"workingDirectory,omitempty"`
	User             string            `json:"user,omitempty"`
	Group            string            `json:"group,omitempty"`
	// +kubebuilder:validation:Enum=no;always;on-success;on-failure;on-abnormal;on-abort;on-watchdog
	Restart         string `json:"restart,omitempty"`
	RestartSec      string `json:"restartSec,omitempty"`
	TimeoutStartSec string `json:"timeoutStartSec,omitempty"`
	TimeoutStopSec  string `json:"timeoutStopSec,omitempty"`

	StateDirectory         string `json:"stateDirectory,omitempty"`
	LogsDirectory          string `json:"logsDirectory,omitempty"`
	ConfigurationDirectory string `json:"configurationDirectory,omitempty"`

	// +listType=atomic
	Steps []Step `json:"steps,omitempty"`
	// +kubebuilder:validation:Enum=Once;Always;Never
	When string `json:"when,omitempty"`

	// DeviceTimeout is how long systemd waits for the device of a .mount
	// or .swap hook (a systemd time span such as "10min"); without it, 90 s.
	DeviceTimeout string `json:"deviceTimeout,omitempty"`

	Directives map[string][]string `json:"directives,omitempty"`
	// +listType=atomic
	Dropins []Dropin `json:"dropins,omitempty"`

	// Files, Directories and Links are what the hook needs on the node
	// besides its unit, placed before the unit starts; Users and Groups
	// the accounts it needs, created through systemd-sysusers. The agent
	// owns, prunes and drift-checks them as `hostprov apply` does.
	// +listType=atomic
	Files []File `json:"files,omitempty"`
	// +listType=atomic
	Directories []Directory `json:"directories,omitempty"`
	// +listType=atomic
	Links []Link `json:"links,omitempty"`
	// +listType=atomic
	Users []User `json:"users,omitempty"`
	// +listType=atomic
	Groups []Group `json:"groups,omitempty"`

	// Disruption is what a change of the hook needs of the node: None
	// (the default), Drain (the agent cordons and drains the node before
	// it applies or removes the hook, and uncordons it after) or Reboot
	// (as Drain, and the node reboots after the apply, one node of the
	// HostHooks at a time).
	// +kubebuilder:validation:Enum=None;Drain;Reboot
	// +optional
	Disruption string `json:"disruption,omitempty"`
}

// File is a file a hook needs on the node: exactly one of contents and
// source gives its bytes. A hook spec's local: (a file beside the spec) has
// no counterpart: a HostHooks has no directory beside it, so its files are
// inline or fetched.
type File struct {
	// +kubebuilder:validation:MinLength=1
	Path string `json:"path"`
	// Contents is the file's text; unset is not an empty file (write "").
	// +optional
	Contents *string `json:"contents,omitempty"`
	// Source is an https:// or s3:// URL to fetch the file from; it needs
	// verification.hash.
	Source string `json:"source,omitempty"`
	// +optional
	Verification *Verification `json:"verification,omitempty"`
	// Mode is the permission bits in octal, as a string: "0644" (the
	// default) or "0o644". A number would be read in decimal.
	// +kubebuilder:validation:Pattern=`^0o?[0-7]+$`
	Mode string `json:"mode,omitempty"`
	// User and Group own the file: a name or a decimal id; empty is root.
	User      string `json:"user,omitempty"`
	Group     string `json:"group,omitempty"`
	Overwrite bool   `json:"overwrite,omitempty"`
}

// Verification is the digest a fetched file must have.
type Verification struct {
	// Hash is "sha256-HEX" or "sha512-HEX".
	// +kubebuilder:validation:MinLength=1
	Hash string `json:"hash"`
}

// Directory is a directory a hook needs on the node.
type Directory struct {
	// +kubebuilder:validation:MinLength=1
	Path string `json:"path"`
	// Mode is the permission bits in octal, as a string; default "0755".
	// +kubebuilder:validation:Pattern=`^0o?[0-7]+$`
	Mode  string `json:"mode,omitempty"`
	User  string `json:"user,omitempty"`
	Group string `json:"group,omitempty"`
}

// Link is a symbolic (or, with hard, a hard) link a hook needs on the node.
type Link struct {
	// +kubebuilder:validation:MinLength=1
	Path string `json:"path"`
	// +kubebuilder:validation:MinLength=1
	Target string `json:"target"`
	Hard   bool   `json:"hard,omitempty"`
	// User and Group own a symbolic link itself; a hard link has no
	// owner of its own.
	User  string `json:"user,omitempty"`
	Group string `json:"group,omitempty"`
	// Overwrite replaces what is at the path already.
	Overwrite bool `json:"overwrite,omitempty"`
}

// User is an account a hook needs, created when the node lacks it.
type User struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// UID unset lets the node pick one.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4294967294
	UID    *int64 `json:"uid,omitempty"`
	System bool   `json:"system,omitempty"`
	Home   string `json:"home,omitempty"`
	Shell  string `json:"shell,omitempty"`
	// Groups are the user's supplementary groups.
	// +listType=atomic
	Groups []string `json:"groups,omitempty"`
	// SSHAuthorizedKeys are the public keys that may log in as the user,
	// each a line of an authorized_keys file.
	// +listType=atomic
	SSHAuthorizedKeys []string `json:"sshAuthorizedKeys,omitempty"`
	// PasswordHash is the user's password as a crypt(3) hash, or "!" or
	// "*" for none; never a clear-text password.
	PasswordHash string `json:"passwordHash,omitempty"`
	// PrimaryGroup is the name of the user's primary group, which must
	// exist; unset for a group of the user's name.
	PrimaryGroup string `json:"primaryGroup,omitempty"`
	// NoCreateHome makes no home directory for the user.
	NoCreateHome bool `json:"noCreateHome,omitempty"`
}

// Group is a group a hook needs, created when the node lacks it.
type Group struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// GID unset lets the node pick one.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4294967294
	GID    *int64 `json:"gid,omitempty"`
	System bool   `json:"system,omitempty"`
}

// Step is one command of a command hook: exactly one of run and sh.
type Step struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +listType=atomic
	Run []string `json:"run,omitempty"`
	Sh  string   `json:"sh,omitempty"`
}

// Dropin is a drop-in file for a hook's unit.
type Dropin struct {
	Name     string `json:"name"`
	Contents string `json:"contents"`
}

// HostHooksStatus is the controller's summary of the NodeHooks.
type HostHooksStatus struct {
	// ObservedGeneration is the generation the status is for.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// HooksHash is the content hash of the current hooks: a node is
	// updated when it applied hooks with this hash.
	HooksHash string `json:"hooksHash,omitempty"`
	// Phase is Progressing, Complete, FinishedWithFailures, Stalled,
	// Degraded or Paused.
	Phase Phase `json:"phase,omitempty"`
	// MatchedNodes is how many nodes the selector matches; UpdatedNodes
	// how many of them applied the current hooks; SucceededNodes and
	// FailedNodes how many of those the hooks succeeded or failed on.
	MatchedNodes   int32 `json:"matchedNodes"`
	UpdatedNodes   int32 `json:"updatedNodes"`
	SucceededNodes int32 `json:"succeededNodes"`
	FailedNodes    int32 `json:"failedNodes"`
	// Errors sums the failures of the current hooks by hook and step.
	// Successful output is never here: it stays small at any number of
	// nodes.
	// +listType=atomic
	// +optional
	Errors []ErrorSummary `json:"errors,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Phase is a HostHooks' phase.
type Phase string

// Phases of a HostHooks.
const (
	// PhaseProgressing: nodes are yet to apply the current hooks.
	PhaseProgressing Phase = "Progressing"
	// PhaseComplete: every matched node applied them and they succeeded.
	PhaseComplete Phase = "Complete"
	// PhaseFinishedWithFailures: every matched node applied them, and
	// some failed, no more than the failure threshold allows.
	PhaseFinishedWithFailures Phase = "FinishedWithFailures"
	// PhaseStalled: nodes hold the rollout past its progress deadline
	// (the Stalled condition names them).
	PhaseStalled Phase = "Stalled"
	// PhaseDegraded: more nodes failed than the failure threshold allows,
	// and the rollout stopped.
	PhaseDegraded Phase = "Degraded"
	// PhasePaused: spec.rollout.pause holds the rollout.
	PhasePaused Phase = "Paused"
)

// Condition types of a HostHooks.
const (
	ConditionProgressing = "Progressing"
	ConditionComplete    = "Complete"
	ConditionDegraded    = "Degraded"
	ConditionPaused      = "Paused"
	// ConditionStalled is True while nodes hold the rollout: its
	// message names them and says why.
	ConditionStalled = "Stalled"
)

// ErrorSummary is the failures of one hook's step (or of the hook as a
// whole, when Step is empty, or of the apply, when Hook is too) over the
// nodes.
type ErrorSummary struct {
	Hook string `json:"hook,omitempty"`
	Step string `json:"step,omitempty"`
	// Count is how many nodes failed here.
	Count int32 `json:"count"`
	// Nodes are the first of them, by name (at most MaxErrorNodes).
	// +listType=atomic
	Nodes []string `json:"nodes"`
	// ExitCode, Reason and Message are of the node that failed last.
	ExitCode *int32 `json:"exitCode,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Message  string `json:"message,omitempty"`
}

// MaxErrorNodes is how many node names an ErrorSummary lists.
const MaxErrorNodes = 10

// +kubebuilder:object:root=true

// HostHooksList is a list of HostHooks.
type HostHooksList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HostHooks `json:"items"`
}

// NodeHooks is one node's result for one HostHooks. The controller creates
// it, owned by the HostHooks, and sets spec.hooksHash when the rollout
// reaches the node; the agent of the node writes its status, and only
// that.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=nh,categories=hostprov
// +kubebuilder:subresource:status
// +kubebuilder:selectablefield:JSONPath=`.spec.nodeName`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.nodeName`
// +kubebuilder:printcolumn:name="HostHooks",type=string,JSONPath=`.spec.hostHooks`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NodeHooks struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodeHooksSpec   `json:"spec"`
	Status NodeHooksStatus `json:"status,omitempty"`
}

// NodeHooksSpec names the node and the HostHooks, and what the rollout
// allows the node to apply.
type NodeHooksSpec struct {
	// NodeName is the node.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="nodeName is immutable"
	NodeName string `json:"nodeName"`
	// HostHooks is the name of the HostHooks.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="hostHooks is immutable"
	HostHooks string `json:"hostHooks"`
	// HooksHash is the content hash of the hooks the node may apply: the
	// HostHooks' status.hooksHash once the rollout reached the node. Empty
	// means none yet; the node keeps what it has.
	// +optional
	HooksHash string `json:"hooksHash,omitempty"`
	// ApprovedAt is when the controller last set hooksHash or remove:
	// the node's progress deadline runs from it.
	// +optional
	ApprovedAt *metav1.Time `json:"approvedAt,omitempty"`
	// Remove is set by the controller when the HostHooks no longer
	// selects the node and the rollout's budget (maxUnavailable) lets
	// the node remove its hooks. The agent prunes the units of a
	// HostHooks that still exists and no longer selects its node only
	// then, so that nodes relabelled out of a selector are disrupted a
	// few at a time, as a rollout is. The controller clears it when the
	// node is selected again. A HostHooks being deleted, or one of which
	// the node has no NodeHooks, is pruned without it.
	// +optional
	Remove bool `json:"remove,omitempty"`
}

// NodePhase is a node's phase for one HostHooks.
type NodePhase string

// Phases of a NodeHooks.
const (
	// NodePending: the node waits for its turn, or for its agent.
	NodePending NodePhase = "Pending"
	// NodeApplying: the agent is applying the hooks, or a step runs.
	NodeApplying NodePhase = "Applying"
	// NodeSucceeded: the hooks applied and every hook is well.
	NodeSucceeded NodePhase = "Succeeded"
	// NodeFailed: the apply or a hook failed (see Message and Hooks).
	NodeFailed NodePhase = "Failed"
	// NodeRemoved: the node no longer has the hooks: the HostHooks is
	// being deleted or no longer selects the node, and the agent pruned
	// its units.
	NodeRemoved NodePhase = "Removed"
)

// NodeHooksStatus is what the agent found after applying.
type NodeHooksStatus struct {
	Phase NodePhase `json:"phase,omitempty"`
	// AppliedHash is the hash of the hooks the node applied last.
	AppliedHash string `json:"appliedHash,omitempty"`
	// Message says why the node failed as a whole: an apply that could
	// not be made (a conflict with another spec set, a file that drifted)
	// or failed.
	Message string `json:"message,omitempty"`
	// AppliedAt is when the agent last applied hooks (or pruned them).
	AppliedAt *metav1.Time `json:"appliedAt,omitempty"`
	// Hooks is each hook's result, in the order of spec.hooks.
	// +listType=atomic
	// +optional
	Hooks []HookResult `json:"hooks,omitempty"`
	// Retry is the HostHooks' spec.retry when the agent last applied
	// the hooks of appliedHash, or started their failed hooks again: a
	// spec.retry that differs is a retry the node has yet to carry out.
	// +optional
	Retry int32 `json:"retry,omitempty"`
}

// HookResult is one hook's unit on the node.
type HookResult struct {
	Name string `json:"name"`
	Unit string `json:"unit"`
	// Phase is the hook's phase: pending, running, succeeded, failed or
	// skipped for command hooks (status's phases), and active, inactive or
	// failed (systemd's ActiveState) for others.
	Phase string `json:"phase"`
	// ExitCode and Reason are of the unit's main process, when it failed.
	ExitCode *int32 `json:"exitCode,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Message  string `json:"message,omitempty"`
	// +listType=atomic
	// +optional
	Steps []StepResult `json:"steps,omitempty"`
	// Output is the last lines of the unit's journal when it failed;
	// successful output is never kept.
	// +listType=atomic
	// +optional
	Output []string `json:"output,omitempty"`
}

// StepResult is how one step of a command hook last ran.
type StepResult struct {
	Name string `json:"name"`
	// State is succeeded, failed, running or "not run".
	State      string       `json:"state"`
	ExitCode   *int32       `json:"exitCode,omitempty"`
	Signal     *int32       `json:"signal,omitempty"`
	Reason     string       `json:"reason,omitempty"`
	StartedAt  *metav1.Time `json:"startedAt,omitempty"`
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
}

// +kubebuilder:object:root=true

// NodeHooksList is a list of NodeHooks.
type NodeHooksList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeHooks `json:"items"`
}

// Labels the controller puts on every NodeHooks, so that an agent watches
// only its node's and the controller finds a HostHooks' at once. A value
// longer than a label allows is shortened with a hash (see LabelValue).
const (
	LabelNode      = "hostprov.dev/node"
	LabelHostHooks = "hostprov.dev/hosthooks"
)

// Finalizer is the controller's on a HostHooks: deleting it waits until
// the agents pruned its units from every node that has them.
const Finalizer = "hostprov.dev/prune"
