package apply

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/hostprov/hostprov/internal/killpoint"
)

// runSysusers runs systemd-sysusers on the sysusers.d files of the plan
// that need it (below Root with --root, or the node's own through
// Options.Tools), then resolves the owners the accounts it created give
// to the plan's paths.
func (e *executor) runSysusers(ctx context.Context) error {
	p := e.p
	if e.sysusersRan {
		return nil
	}
	e.sysusersRan = true
	if len(p.sysusers) == 0 {
		return e.setPasswords(ctx)
	}
	var args []nodeArg
	for _, cfg := range p.sysusers {
		args = append(args, nodeArg{s: cfg, node: true})
	}
	killpoint.At("sysusers")
	shown, out, err := p.opts.runTool(ctx, sysusersCommand, []string{"--root=" + p.opts.Root}, args, nil)
	if err != nil {
		return fmt.Errorf("systemd-sysusers %s: %v: %s; the users and groups may be made in part: fix the problem and run hostprov apply again",
			shown, err, strings.TrimSpace(string(out)))
	}
	for _, a := range p.Accounts {
		if a.changes() {
			e.emit(Event{Action: EvCreated, Account: string(a.Kind) + " " + a.Name, Path: a.Config, Reason: a.Reason})
		}
	}
	acc, err := readAccounts(newNodeFS(p.opts))
	if err != nil {
		return err
	}
	for i := range p.Files {
		pc := p.Files[i].path
		if pc == nil || pc.pendingUser == "" && pc.pendingGroup == "" {
			continue
		}
		if pc.pendingUser != "" {
			if pc.owner.UID, err = acc.id(pc.pendingUser, true); err != nil {
				return fmt.Errorf("%s: systemd-sysusers ran, but %v", p.Files[i].Path, err)
			}
		}
		if pc.pendingGroup != "" {
			if pc.owner.GID, err = acc.id(pc.pendingGroup, false); err != nil {
				return fmt.Errorf("%s: systemd-sysusers ran, but %v", p.Files[i].Path, err)
			}
		}
		pc.pendingUser, pc.pendingGroup = "", ""
		p.Files[i].Owner = pc.ownerText()
	}
	return e.setPasswords(ctx)
}

// chpasswdCommand is the node's tool that sets password hashes; a
// variable for tests.
var chpasswdCommand = "chpasswd"

// setPasswords sets the password hashes the plan sets, once the accounts
// exist, with the node's own chpasswd (-e: the input is a hash; --root for
// an image, Options.Tools for a node seen from a container), given on its
// standard input: a hash is never an argument that ps shows, nor part of
// a message.
func (e *executor) setPasswords(ctx context.Context) error {
	var in bytes.Buffer
	var names []string
	for _, a := range e.p.Accounts {
		if a.Password == "set" && a.Op != OpKeep {
			fmt.Fprintf(&in, "%s:%s\n", a.Name, a.hash)
			names = append(names, a.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	killpoint.At("chpasswd")
	shown, out, err := e.p.opts.runTool(ctx, chpasswdCommand, []string{"--root", e.p.opts.Root}, []nodeArg{{s: "-e"}}, in.Bytes())
	if err != nil {
		return fmt.Errorf("%s %s (the password of %s): %v: %s; fix the problem and run hostprov apply again",
			chpasswdCommand, shown, strings.Join(names, ", "), err, strings.TrimSpace(string(out)))
	}
	for _, name := range names {
		e.emit(Event{Action: EvChanged, Account: "user " + name, Reason: "password set to the spec's hash"})
	}
	return nil
}
