package agent

import (
	"context"
	"fmt"

	sddbus "github.com/coreos/go-systemd/v22/dbus"

	"github.com/hostprov/hostprov/internal/sdbus"
	"github.com/hostprov/hostprov/pkg/apply"
)

// Systemd is the agent's connection to the node's systemd: what apply
// drives, the unit changes systemd signals on it, and when it ends.
type Systemd struct {
	apply.Systemd
	// Changes carries the units whose state systemd says changed, as
	// their name and new ActiveState and SubState; a UnitState with no
	// Unit means that changes may have been missed. Nil: no signals (a
	// fake), so nothing is reported between syncs.
	Changes <-chan UnitState
	// Lost is closed when the connection ends; nil when it never does.
	Lost <-chan struct{}
	// Close closes the connection; nil when there is nothing to close.
	Close func()
	// Reboot asks systemd to reboot the node, as systemctl reboot does;
	// nil when the connection cannot.
	Reboot func(ctx context.Context) error
	// Tools runs the node's own systemd-sysusers and chpasswd for the
	// hooks' users and groups (see nodeTools); nil runs this machine's.
	Tools apply.Tools
}

// UnitState is a unit's ActiveState and SubState, as a signal of systemd
// carried them (either may be empty when the signal did not).
type UnitState struct {
	Unit        string
	ActiveState string
	SubState    string
}

// changesBuffer is how many signals may wait for the agent. go-systemd
// drops a signal that finds the buffer full, and says so; the agent then
// reads every unit again.
const changesBuffer = 256

// Dial connects to systemd over its private socket (sdbus.PrivateSocket on
// a node) and follows its signals: the PropertiesChanged of units, which
// systemd sends to every connection on that socket. journalctl, when not
// nil, replaces the Manager's way to read a failed unit's journal (a test
// rig's is not the host's).
func Dial(ctx context.Context, socket string, journalctl func(ctx context.Context, args ...string) ([]byte, error)) (*Systemd, error) {
	m, err := sdbus.DialUnitChanges(ctx, socket)
	if err != nil {
		return nil, err
	}
	if journalctl != nil {
		m.RunJournalctl = journalctl
	}
	// Subscribe is what a client of the system bus needs to get the
	// signals; on the private socket systemd sends them anyway, and
	// Subscribe does nothing more there.
	if err := m.Conn().Subscribe(); err != nil {
		m.Close()
		return nil, fmt.Errorf("subscribe to systemd's signals at %s: %w", socket, err)
	}
	updates := make(chan *sddbus.PropertiesUpdate, changesBuffer)
	errs := make(chan error, 1)
	m.Conn().SetPropertiesSubscriber(updates, errs)
	changes := make(chan UnitState, changesBuffer)
	go func() {
		for {
			select {
			case <-m.Done():
				return
			case u := <-updates:
				s := UnitState{Unit: u.UnitName}
				a, aok := u.Changed["ActiveState"]
				b, bok := u.Changed["SubState"]
				if !aok && !bok {
					continue
				}
				s.ActiveState, _ = a.Value().(string)
				s.SubState, _ = b.Value().(string)
				send(changes, s, m.Done())
			case <-errs:
				// The update channel was full: a change may be lost.
				send(changes, UnitState{}, m.Done())
			}
		}
	}()
	reboot := func(ctx context.Context) error {
		// reboot.target with replace-irreversibly, as systemctl
		// reboot starts it: units stop in order, and no later job
		// cancels it.
		_, err := m.Conn().StartUnitContext(ctx, "reboot.target", "replace-irreversibly", nil)
		return err
	}
	return &Systemd{Systemd: m, Changes: changes, Lost: m.Done(), Close: m.Close, Reboot: reboot}, nil
}

// DialNode is Dial for an agent in a pod: it reads a failed unit's journal
// with the node's journalctl, and creates accounts with the node's
// systemd-sysusers and chpasswd, run by the node's systemd (see
// sdbus.Manager.HostJournalctl and HostTools), through the state
// directory of opts, which the pod sees of the node.
func DialNode(ctx context.Context, socket string, opts apply.Options) (*Systemd, error) {
	sd, err := Dial(ctx, socket, nil)
	if err != nil {
		return nil, err
	}
	stateDir := opts.StateDir
	if stateDir == "" {
		stateDir = apply.DefaultStateDir
	}
	m := sd.Systemd.(*sdbus.Manager)
	m.RunJournalctl = m.HostJournalctl(stateDir, opts.StateDirPath())
	sd.Tools = nodeTools(m, opts)
	return sd, nil
}

func send(ch chan<- UnitState, s UnitState, done <-chan struct{}) {
	select {
	case ch <- s:
	case <-done:
	}
}
