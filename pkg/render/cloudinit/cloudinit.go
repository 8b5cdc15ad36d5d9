package cloudinit

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/hostprov/hostprov/pkg/render/internal/unitfiles"
	"mime/multipart"
	"net/textproto"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/yamlnode"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render/internal/yamlwrite"
	"github.com/hostprov/hostprov/pkg/units"
)

// Options are the choices of the cloud-init output. The zero value
// is a plain #cloud-config document, which is what cloud-init, and every
// cloud's user data field, expects.
type Options struct {
	// MIME wraps the document in a multipart/mixed MIME message with one
	// text/cloud-config part, for tooling that only passes MIME user data
	// on. Check the output format with CheckMIME first: a MIME envelope
	// keeps Ignition and coreos-cloudinit machines from booting.
	MIME bool
	// Storage is what the document writes besides the units: files,
	// directories and links.
	Storage compile.Storage
}

// unitDir is where the cloud-init output writes unit files and
// drop-ins: the administrator's unit directory, which wins over the units
// of the image.
const unitDir = "/etc/systemd/system"

// ErrMIMEForIgnition is the error of CheckMIME for an Ignition or Butane
// output.
var ErrMIMEForIgnition = errors.New("Ignition reads user data as one JSON config and fails the boot on a multipart MIME message, " +
	"as coreos-cloudinit does on Flatcar: a MIME envelope is only for --format cloud-init; drop --mime")

// CheckMIME reports whether a MIME envelope may be asked for with the
// output format named format ("ignition", "butane", "cloud-init", "kops",
// "units", "dir"). It returns nil for cloud-init, an error wrapping
// ErrMIMEForIgnition for ignition and butane, whose machines do not boot
// on MIME user data, and another error for every other format, which is
// not user data at all. Callers treat the error as a usage error.
func CheckMIME(format string) error {
	switch format {
	case "cloud-init":
		return nil
	case "ignition", "butane":
		return fmt.Errorf("--mime with --format %s: %w", format, ErrMIMEForIgnition)
	}
	return fmt.Errorf("--mime is only for --format cloud-init: --format %s is not instance user data", format)
}

// cloudConfigHeader is the first line cloud-init needs to read a document
// as cloud-config.
const cloudConfigHeader = "#cloud-config\n"

// runcmdComment explains the commands to whoever reads the user data.
const runcmdComment = `Runs once, late in the first boot (in cloud-final.service, after multi-user.target):
reload systemd once so that it sees the files above; enable, disable and mask as
the spec says; then start now what the boot has gone past. --no-block queues the
jobs without waiting, so that a long hook does not hold up cloud-init.`

// bootcmdGroupsComment explains the bootcmd of groups.
const bootcmdGroupsComment = `The groups with a gid, or system groups, which cloud-init's groups: cannot make;
bootcmd runs at every boot, so each is added only when missing.`

// usersComment explains the default entry of users:.
const usersComment = "default keeps the image's default user, which users: would otherwise replace."

// runcmdStorageComment explains the commands that make directories and
// links, which come first.
const runcmdStorageComment = `First the directories and links of the spec, which cloud-init has no module for, the
owners that write_files cannot set (numeric ids), and the files from a URL, each checked
against its hash before it is written.`

// runcmdHeldComment says what a failed download does, when there can be one.
const runcmdHeldComment = `A hook whose download fails is neither enabled nor started (the commands behind its
mark in ` + heldDir + `), and the last command then fails, so that
cloud-init reports it.`

// Render returns a #cloud-config document that installs the units:
// write_files writes every unit file and drop-in under unitDir
// (mode 0644, owner root, content exactly the unit's bytes), and runcmd
// then runs, as argument lists that no shell reinterprets:
//
//   - systemctl daemon-reload, once and first: write_files runs early in
//     boot (cloud-init.service), after systemd has loaded its units, so the
//     manager has to be told about the new files;
//   - systemctl enable --no-reload for the enabled units, and disable
//     --no-reload for those with enabled: false. Their links only matter
//     from the next boot on, so they need no reload of their own. The units
//     hostprov writes go in one command; units of the image that the spec
//     only names get one command each, because systemctl enables none of
//     the units it is given when one of them does not exist;
//   - systemctl mask for masked units, which works whether the unit exists
//     or not; systemctl then reloads the manager itself, so that the mask
//     holds from now on and not only after a reboot; then systemctl stop
//     --no-block for them, because a unit of the image may have started
//     during this boot before it was masked;
//   - systemctl try-restart --no-block for the services of the image that
//     get drop-ins: one that started earlier in this boot runs with its
//     drop-ins from now on, not only after a reboot; one that is not
//     running is left alone. (Other unit types are not restarted: that
//     would unmount a mount or turn a swap off and on.)
//   - systemctl start --no-block for the enabled units that enabling would
//     start at boot (an [Install] with WantedBy=, RequiredBy= or UpheldBy=,
//     a template through its DefaultInstance=, and units of the image the
//     spec enables). runcmd runs in cloud-final.service, after
//     multi-user.target: enabling a unit then does not start it in this
//     boot, since the targets it is wanted by have been reached already.
//     --no-block queues the jobs and returns, so that a long oneshot hook
//     does not stall cloud-init, and a unit ordered after cloud-init's own
//     units cannot deadlock with the command waiting for it.
//
// Content is a YAML literal block where YAML can hold the bytes in one,
// a double-quoted scalar where it cannot (trailing spaces, characters that
// YAML escapes), and base64 (encoding: b64) for bytes that are not UTF-8.
// With opts.MIME the document is wrapped as MIME does.
//
// The same units give the same bytes, every time.
func Render(us []compile.Unit, opts Options) ([]byte, error) {
	doc, err := configDoc(us, opts)
	if err != nil {
		return nil, err
	}
	return encodeCloudConfig(doc, opts)
}

// encodeCloudConfig writes a cloud-config document's root mapping after
// its header line, wrapped in MIME when opts ask for it.
func encodeCloudConfig(doc *yaml.Node, opts Options) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(len(cloudConfigHeader) + yamlwrite.Size(doc))
	b.WriteString(cloudConfigHeader)
	if len(doc.Content) == 0 {
		b.WriteString("{}\n")
	} else if err := yamlwrite.Encode(&b, doc); err != nil {
		return nil, err
	}
	if opts.MIME {
		return MIME(b.Bytes())
	}
	return b.Bytes(), nil
}

// configDoc is the root mapping of Render's document.
func configDoc(us []compile.Unit, opts Options) (*yaml.Node, error) {
	doc := &yaml.Node{Kind: yaml.MappingNode}
	held := heldMarks(us, opts.Storage)
	stFiles, stCmds, err := storageEntries(opts.Storage, held)
	if err != nil {
		return nil, err
	}
	users, groups, bootcmd := accountEntries(opts.Storage)
	if len(bootcmd) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, argv := range bootcmd {
			seq.Content = append(seq.Content, yamlnode.Words(argv))
		}
		key := yamlnode.Str("bootcmd")
		key.HeadComment = bootcmdGroupsComment
		doc.Content = append(doc.Content, key, seq)
	}
	if groups != nil {
		doc.Content = append(doc.Content, yamlnode.Str("groups"), groups)
	}
	if users != nil {
		key := yamlnode.Str("users")
		key.HeadComment = usersComment
		doc.Content = append(doc.Content, key, users)
	}
	if files := unitfiles.Files(us); len(files)+len(stFiles) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		seq.Content = append(seq.Content, stFiles...)
		k := newFileNodes()
		for _, f := range files {
			seq.Content = append(seq.Content, writeFileEntry(unitDir+"/"+f.Path, f.Contents, k))
		}
		doc.Content = append(doc.Content, yamlnode.Str("write_files"), seq)
	}
	cmds, err := startCommands(us, held)
	if err != nil {
		return nil, err
	}
	cmds = append(stCmds, cmds...)
	if len(held) > 0 {
		cmds = append(cmds, heldReport)
	}
	if len(cmds) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, argv := range cmds {
			c := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
			for _, a := range argv {
				c.Content = append(c.Content, yamlnode.Str(a))
			}
			seq.Content = append(seq.Content, c)
		}
		key := yamlnode.Str("runcmd")
		key.HeadComment = runcmdComment
		if len(stCmds) > 0 {
			key.HeadComment = runcmdStorageComment + "\n" + runcmdComment
		}
		if len(held) > 0 {
			key.HeadComment = runcmdStorageComment + "\n" + runcmdHeldComment + "\n" + runcmdComment
		}
		doc.Content = append(doc.Content, key, seq)
	}
	return doc, nil
}

// writeFile is one entry of write_files.
//
// There is one per unit file and drop-in, so what is the same in all of
// them (the keys, the mode and the owner) is one set of nodes for the
// document, fileNodes, which nothing changes once made; an entry's
// mapping and its path are cut from one array. A node each had made the
// nodes a fifth of what a cloud-init render of 10,000 hooks allocated.
func writeFileEntry(path string, contents []byte, k *fileNodes) *yaml.Node {
	ns := new([2]yaml.Node)
	ns[1] = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: path}
	content := make([]*yaml.Node, 0, 10)
	content = append(content, k.path, &ns[1], k.permissions, k.mode, k.owner, k.root)
	if !utf8.Valid(contents) {
		// YAML holds only Unicode text.
		content = append(content, k.encoding, k.b64, k.content, yamlnode.Str(base64.StdEncoding.EncodeToString(contents)))
	} else {
		content = append(content, k.content, yamlnode.Text(contents))
	}
	ns[0] = yaml.Node{Kind: yaml.MappingNode, Content: content}
	return &ns[0]
}

// fileNodes are the nodes every write_files entry of a document shares.
type fileNodes struct {
	path, permissions, mode, owner, root, encoding, b64, content *yaml.Node
}

func newFileNodes() *fileNodes {
	mode := yamlnode.Str("0644")
	mode.Style = yaml.SingleQuotedStyle // a string: cloud-init refuses the integer 644
	return &fileNodes{path: yamlnode.Str("path"), permissions: yamlnode.Str("permissions"), mode: mode,
		owner: yamlnode.Str("owner"), root: yamlnode.Str("root:root"), encoding: yamlnode.Str("encoding"),
		b64: yamlnode.Str("b64"), content: yamlnode.Str("content")}
}

// heldDir holds the marks of the hooks whose download failed, one file
// named after each hook, for the rest of the boot (/run is emptied at the
// next).
const heldDir = "/run/hostprov/download-failed"

// heldMarks returns the hooks (by index) that have units and a file
// to download, each with its mark: the file the download script makes
// when a download of the hook fails.
//
// Why: runcmd goes on after a failed command, so a hook whose download
// failed would be enabled and started without its file, and run with
// what is missing, or with an older file of the image. As with apply on
// a node, a failed download fails its hook and nothing else: the hook's
// units are written, but neither enabled nor started, the other hooks'
// are, and runcmd ends with heldReport, which fails when a mark is
// there, so that cloud-init's status reports an error and says why.
func heldMarks(us []compile.Unit, st compile.Storage) map[hookKey]string {
	names := map[hookKey]string{}
	for _, u := range us {
		names[hookKey{u.Pos.File, u.Hook}] = u.HookName
	}
	var held map[hookKey]string
	for _, f := range st.Files {
		k := hookKey{f.Pos.File, f.Hook}
		if name, ok := names[k]; ok && f.Source != "" {
			if held == nil {
				held = map[hookKey]string{}
			}
			held[k] = heldDir + "/" + name
		}
	}
	return held
}

// hookKey names a hook among those of several specs: a hook's index is
// its place in its own spec file, so hook 0 of one spec is not hook 0 of
// another (a set of specs rendered at once, render -d).
type hookKey struct {
	file string
	hook int
}

// heldGate runs the command that follows its mark only while the mark is
// not there: sh -c heldGate hostprov MARK COMMAND...
const heldGate = `m=$1; shift; if [ -e "$m" ]; then echo "hostprov: a download of this hook failed ($m), so not: $*" >&2; exit 0; fi; exec "$@"`

// heldReport ends runcmd: it fails, naming the hooks, when a download
// failed. cloud-init takes runcmd's status from its last command.
var heldReport = []string{"sh", "-c", `if [ -d ` + heldDir + ` ]; then echo "hostprov: downloads failed; these hooks were neither enabled nor started: $(ls ` + heldDir + ` | tr '\n' ' ')" >&2; exit 1; fi`}

// startCommands returns the runcmd of Render, in order; see there
// for why each command is there. The enabling and starting of the units of
// a hook in held waits for its mark (heldGate).
func startCommands(us []compile.Unit, held map[hookKey]string) ([][]string, error) {
	var (
		enable, disable, mask, restart, start []string
		enableOne, disableOne                 [][]string
		heldEnable, heldStart                 [][]string
	)
	// gated is cmd and names behind the mark of hook h.
	gated := func(h hookKey, cmd []string, names ...string) []string {
		return append(append([]string{"sh", "-c", heldGate, "hostprov", held[h]}, cmd...), names...)
	}
	for _, u := range us {
		if h := (hookKey{u.Pos.File, u.Hook}); held[h] != "" && !u.Mask && u.Enabled != nil && *u.Enabled {
			heldEnable = append(heldEnable, gated(h, []string{"systemctl", "enable", "--no-reload"}, u.Name))
			name, ok, err := startName(u)
			if err != nil {
				return nil, err
			}
			if ok {
				heldStart = append(heldStart, gated(h, []string{"systemctl", "start", "--no-block"}, name))
			}
			continue
		}
		if u.Mask {
			mask = append(mask, u.Name)
			continue
		}
		written := u.Contents != nil
		if !written && len(u.Dropins) > 0 && units.Type(u.Name) == "service" && !unitfiles.IsTemplate(u.Name) {
			restart = append(restart, u.Name)
		}
		if u.Enabled == nil {
			continue
		}
		switch {
		case *u.Enabled && written:
			enable = append(enable, u.Name)
		case *u.Enabled:
			enableOne = append(enableOne, []string{"systemctl", "enable", "--no-reload", u.Name})
		case written:
			disable = append(disable, u.Name)
		default:
			disableOne = append(disableOne, []string{"systemctl", "disable", "--no-reload", u.Name})
		}
		if !*u.Enabled {
			continue
		}
		name, ok, err := startName(u)
		if err != nil {
			return nil, err
		}
		if ok {
			start = append(start, name)
		}
	}
	var cmds [][]string
	if len(us) > 0 {
		cmds = append(cmds, []string{"systemctl", "daemon-reload"})
	}
	cmds = appendCmd(cmds, []string{"systemctl", "enable", "--no-reload"}, enable)
	cmds = append(cmds, enableOne...)
	cmds = append(cmds, heldEnable...)
	cmds = appendCmd(cmds, []string{"systemctl", "disable", "--no-reload"}, disable)
	cmds = append(cmds, disableOne...)
	cmds = appendCmd(cmds, []string{"systemctl", "mask"}, mask)
	cmds = appendCmd(cmds, []string{"systemctl", "stop", "--no-block"}, mask)
	cmds = appendCmd(cmds, []string{"systemctl", "try-restart", "--no-block"}, restart)
	cmds = appendCmd(cmds, []string{"systemctl", "start", "--no-block"}, start)
	cmds = append(cmds, heldStart...)
	return cmds, nil
}

func appendCmd(cmds [][]string, cmd, names []string) [][]string {
	if len(names) == 0 {
		return cmds
	}
	return append(cmds, append(cmd, names...))
}

// startName returns the unit to start for an enabled unit, and false when
// enabling it would not start it at boot either: it has no [Install] that
// pulls it in, or it is a template without DefaultInstance=. A unit of the
// image (no contents) is started: the spec enables it to have it run.
func startName(u compile.Unit) (string, bool, error) {
	if u.Contents == nil {
		return u.Name, !unitfiles.IsTemplate(u.Name), nil
	}
	vs, err := units.LastValues(u.Contents, units.SectionInstall, startKeys)
	if err != nil {
		return "", false, fmt.Errorf("%s: %v", u.Name, err)
	}
	if vs[0] == "" && vs[1] == "" && vs[2] == "" {
		return "", false, nil
	}
	if !unitfiles.IsTemplate(u.Name) {
		return u.Name, true, nil
	}
	inst := vs[3]
	if inst == "" {
		return "", false, nil
	}
	prefix, suffix, _ := strings.Cut(u.Name, "@")
	return prefix + "@" + inst + suffix, true, nil
}

// startKeys are the [Install] keys startName reads: the three that pull
// a unit in at boot, then DefaultInstance.
var startKeys = []string{"WantedBy", "RequiredBy", "UpheldBy", "DefaultInstance"}

// MIME wraps a #cloud-config document as a multipart/mixed MIME
// message with one text/cloud-config part, the form of cloud-init's own
// `cloud-init devel make-mime`. The boundary is derived from the document,
// so the same document gives the same message. The part is 7bit when the
// document is ASCII with lines of at most 998 bytes, and base64 otherwise:
// cloud-init reads an 8bit part through Python's email package, which does
// not give non-ASCII text back unchanged.
func MIME(doc []byte) ([]byte, error) {
	sum := sha256.Sum256(doc)
	boundary := "hostprov-" + hex.EncodeToString(sum[:16])
	if bytes.Contains(doc, []byte(boundary)) {
		// Only a document made to contain its own hash can get here.
		return nil, fmt.Errorf("the cloud-config document contains its MIME boundary %s", boundary)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "Content-Type: multipart/mixed; boundary=\"%s\"\r\nMIME-Version: 1.0\r\n\r\n", boundary)
	w := multipart.NewWriter(&b)
	if err := w.SetBoundary(boundary); err != nil {
		return nil, err
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `attachment; filename="cloud-config"`)
	body := doc
	if sevenBit(doc) {
		h.Set("Content-Type", `text/cloud-config; charset="us-ascii"`)
		h.Set("Content-Transfer-Encoding", "7bit")
	} else {
		h.Set("Content-Type", `text/cloud-config; charset="utf-8"`)
		h.Set("Content-Transfer-Encoding", "base64")
		body = base64Lines(doc)
	}
	h.Set("MIME-Version", "1.0")
	p, err := w.CreatePart(h)
	if err != nil {
		return nil, err
	}
	if _, err := p.Write(body); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// sevenBit reports whether b may be sent as 7bit MIME: ASCII without NUL
// or CR, in lines of at most 998 bytes (RFC 5322).
func sevenBit(b []byte) bool {
	line := 0
	for _, c := range b {
		switch {
		case c == '\n':
			line = 0
			continue
		case c == 0 || c == '\r' || c >= utf8.RuneSelf:
			return false
		}
		if line++; line > 998 {
			return false
		}
	}
	return true
}

// base64Lines is b in base64, in lines of 76 characters (RFC 2045).
func base64Lines(b []byte) []byte {
	enc := base64.StdEncoding.EncodeToString(b)
	var out bytes.Buffer
	for len(enc) > 76 {
		out.WriteString(enc[:76])
		out.WriteString("\r\n")
		enc = enc[76:]
	}
	out.WriteString(enc)
	out.WriteString("\r\n")
	return out.Bytes()
}
