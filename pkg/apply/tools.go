package apply

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// Tools runs the node's own programs (systemd-sysusers, chpasswd) for an
// apply that works on a node's file system mounted at Options.Root while
// the node runs: an agent in a container, whose image has none of those
// programs, and whose programs would in any case take the container's
// libraries, NSS modules and PAM configuration rather than the node's.
// Giving the programs --root instead does not make up for that: chpasswd
// --root chroots, which needs a capability the agent does not have.
type Tools interface {
	// Run runs argv on the node, as the node's root: argv[0] is the
	// absolute path of a program as the node sees it, and the other
	// arguments name paths the node's way too (no --root). stdin, when
	// not nil, is its standard input, and may hold a secret (a password
	// hash): it must never be logged, nor shown as an argument. Run
	// returns what the program wrote, and an error that says how it
	// ended when it did not exit with status 0.
	Run(ctx context.Context, argv []string, stdin []byte) ([]byte, error)
}

// nodePATH is where the node's tools are looked for, in systemd's order
// (its default PATH for services, with /sbin and /bin of a node whose /usr
// is not merged).
var nodePATH = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// tool returns the program to run for the tool name: with Tools, the node
// path of the node's own program of that name, found below Root as the
// node's PATH finds it (a link such as /sbin -> usr/sbin followed inside
// the node's tree); without, name as this machine's PATH finds it. A name
// that is a path is looked for there only.
func (o Options) tool(name string) (string, error) {
	if o.Tools == nil {
		return exec.LookPath(name)
	}
	root := o.Root
	if root == "" {
		root = "/"
	}
	dirs := nodePATH
	if path.IsAbs(name) {
		dirs, name = []string{path.Dir(name)}, path.Base(name)
	}
	for _, dir := range dirs {
		p := path.Join(dir, name)
		real, ok, err := resolveNodePath(root, p)
		if err != nil {
			return "", err
		}
		if !ok {
			continue
		}
		fi, err := os.Stat(filepath.Join(root, real))
		if err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("the node has no %s in %s (looked below %s)", name, strings.Join(dirs, ":"), root)
}

// runTool runs the tool name with args, where each arg that is a node path
// is given by nodeArg (so that without Tools it is found below Root), and
// rootFlag the flag that tells the tool, run on this machine, where the
// node's root is ("" for none). With Tools the node runs its own tool on
// its own paths, and no --root is given. It returns the arguments as
// messages show them (never stdin) and the tool's output.
func (o Options) runTool(ctx context.Context, name string, rootFlag []string, args []nodeArg, stdin []byte) (string, []byte, error) {
	prog, err := o.tool(name)
	if err != nil {
		return name, nil, err
	}
	argv := []string{prog}
	if o.Tools == nil && o.Root != "" {
		argv = append(argv, rootFlag...)
	}
	for _, a := range args {
		if a.node && o.Tools == nil {
			argv = append(argv, filepath.Join(o.Root, a.s))
			continue
		}
		argv = append(argv, a.s)
	}
	shown := strings.Join(argv[1:], " ")
	if o.Tools != nil {
		out, err := o.Tools.Run(ctx, argv, stdin)
		return shown, out, err
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return shown, out, err
}

// nodeArg is an argument of a tool: a node path when node is set.
type nodeArg struct {
	s    string
	node bool
}
