package sdbus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
)

// DialPrivate connects to a systemd manager through socketPath, a socket
// that speaks systemd's private D-Bus protocol: peer-to-peer, authenticated
// with EXTERNAL as the caller's uid, and without the Hello call that only a
// bus daemon understands. On a host that socket is /run/systemd/private; in
// a test rig it is the rig's relay socket.
//
// go-systemd's NewSystemdConnectionContext speaks the same protocol but
// hardcodes /run/systemd/private, so code that must work both on a node and
// against a test rig (whose manager is reachable only through another path)
// dials with this function instead.
//
// ctx bounds connecting, authenticating and the first call that go-systemd
// makes on a new connection. The connection then lives until the caller
// closes it. This differs on purpose from go-systemd, which closes its
// connection when the dial context ends: a caller that dials with a timeout
// would otherwise get a connection that dies under it later.
func DialPrivate(ctx context.Context, socketPath string) (*sddbus.Conn, error) {
	conn, _, err := dialPrivate(ctx, socketPath, false)
	if err != nil {
		return nil, fmt.Errorf("connect to systemd at %s: %w", socketPath, err)
	}
	return conn, nil
}

// errFirstCall marks a dial that authenticated but got no answer to
// go-systemd's first call before ctx ended.
var errFirstCall = errors.New("no answer to the first call")

// dialPrivate is DialPrivate that returns the godbus connection too, whose
// context ends when the connection does, and errors that do not name the
// socket.
func dialPrivate(ctx context.Context, socketPath string, unitChanges bool) (*sddbus.Conn, *godbus.Conn, error) {
	bus, err := dialAuthenticated(ctx, socketPath, unitChanges)
	if err != nil {
		return nil, nil, err
	}
	// NewConnection sends AddMatch (to receive JobRemoved) and waits for
	// its answer with no context at all: a peer that authenticates and
	// then answers nothing would hold it for ever. Closing the connection
	// ends that wait.
	stop := context.AfterFunc(ctx, func() { bus.Close() })
	// go-systemd asks for two connections, one for calls and one for
	// signals; it gets the same one twice. systemd sends every signal
	// (every unit's every state change) to every connection on its private
	// socket, subscribed or not, so a second connection doubles the work
	// of an apply that starts many units, in systemd and here. One
	// connection carries calls and signals alike.
	conn, err := sddbus.NewConnection(func() (*godbus.Conn, error) { return bus, nil })
	if !stop() {
		return nil, nil, fmt.Errorf("%w: %w", errFirstCall, ctx.Err())
	}
	if err != nil {
		bus.Close()
		return nil, nil, err
	}
	// go-systemd does not look at AddMatch's answer: a peer that hung up
	// instead shows only in the connection.
	if !bus.Connected() {
		return nil, nil, fmt.Errorf("%w: the connection was closed (%w)", errFirstCall, io.EOF)
	}
	return conn, bus, nil
}

// dialAuthenticated opens one D-Bus connection on socketPath and completes
// the EXTERNAL authentication, all within ctx. Its signal handler passes on
// JobRemoved, and with unitChanges the PropertiesChanged of units too.
func dialAuthenticated(ctx context.Context, socketPath string, unitChanges bool) (*godbus.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// godbus's unix transport, not NewConn over a net.Conn: v5.1.0's generic
	// transport panics (in the decoder, on its own goroutine) when the
	// connection is closed while it waits for a message, which every Close
	// risks. Connecting to a unix socket does not block; only authentication
	// waits for the peer.
	conn, err := godbus.Dial("unix:path="+godbus.EscapeBusAddressValue(socketPath),
		godbus.WithSignalHandler(newJobSignals(unitChanges)))
	if err != nil {
		return nil, err
	}
	// Auth takes no context: should ctx end first (systemd, or a relay whose
	// systemd is gone, may never answer), closing the connection ends Auth.
	// Not godbus.WithContext: that would close the connection whenever ctx
	// ends, long after dialling.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	// The uid as a number, not a user name: no user database lookup, which
	// a statically linked binary on a minimal host may not be able to do.
	err = conn.Auth([]godbus.Auth{godbus.AuthExternal(strconv.Itoa(os.Getuid()))})
	if !stop() {
		return nil, fmt.Errorf("authenticate: %w", ctx.Err())
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	// No Hello: systemd's private socket is peer-to-peer, not a bus.
	return conn, nil
}

// jobSignals is the signal handler of a Manager's connection: it passes on
// JobRemoved, the one signal go-systemd acts on for a Manager (it ends a job
// wait), and, for a Manager that follows units (DialUnitChanges: the
// agent), their PropertiesChanged; it drops every other signal where godbus
// delivers it.
//
// systemd sends every signal to every connection on its private socket,
// subscribed or not: starting 1,000 new units sends some 15 PropertiesChanged
// a unit, a UnitNew and a JobNew besides the JobRemoved, 19,000 signals in
// all. Passed on, each went through go-systemd's signal channel (100 deep)
// to its dispatch goroutine, which looks only at JobRemoved; and while a
// StartUnit call is waiting for its answer that goroutine waits for the
// lock the call holds, so the channel fills and godbus starts a goroutine
// for every further signal (hundreds were alive at once during an apply's
// starts) to hand it on later. Dropped here, they cost only their decoding.
type jobSignals struct {
	unitChanges bool
	inner       interface {
		godbus.SignalHandler
		godbus.SignalRegistrar
		godbus.Terminator
	}
}

func newJobSignals(unitChanges bool) *jobSignals {
	return &jobSignals{unitChanges: unitChanges, inner: godbus.NewDefaultSignalHandler()}
}

func (h *jobSignals) DeliverSignal(iface, name string, signal *godbus.Signal) {
	if iface == "org.freedesktop.systemd1.Manager" && name == "JobRemoved" ||
		h.unitChanges && iface == "org.freedesktop.DBus.Properties" && name == "PropertiesChanged" {
		h.inner.DeliverSignal(iface, name, signal)
	}
}

// AddSignal, RemoveSignal and Terminate are the default handler's: on
// Terminate (the connection closed) it closes go-systemd's channel, which
// ends go-systemd's dispatch and so every job wait (Manager.wait).
func (h *jobSignals) AddSignal(ch chan<- *godbus.Signal)    { h.inner.AddSignal(ch) }
func (h *jobSignals) RemoveSignal(ch chan<- *godbus.Signal) { h.inner.RemoveSignal(ch) }
func (h *jobSignals) Terminate()                            { h.inner.Terminate() }
