// Package sdbustest has a fake of systemd's private D-Bus socket, for tests
// of what hostprov does when systemd answers late, never, or hangs up: in
// sdbus itself, and in the command line that drives it.
package sdbustest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	godbus "github.com/godbus/dbus/v5"
)

// Peer listens on a unix socket and plays systemd's side of the private
// socket as far as a test needs: it completes the EXTERNAL authentication
// as systemd does, then hands every method call to its Answer function.
// It is safe for concurrent use.
type Peer struct {
	// Socket is the path it listens on.
	Socket string

	t      testing.TB
	answer Answer

	mu     sync.Mutex
	conns  []net.Conn
	calls  []string // the members called, in order
	serial uint32
}

// Answer returns the body of the reply to a method call (nil for an empty
// reply), or ok false to leave the call unanswered, as a hung systemd does.
type Answer func(call *godbus.Message) (body []any, ok bool)

// New starts a Peer on a socket in a temporary directory; it hangs up and
// stops listening when the test ends.
func New(t testing.TB, answer Answer) *Peer {
	t.Helper()
	p := &Peer{t: t, Socket: filepath.Join(t.TempDir(), "private"), answer: answer}
	l, err := net.Listen("unix", p.Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		l.Close()
		p.HangUp()
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.conns = append(p.conns, c)
			p.mu.Unlock()
			go p.serve(c)
		}
	}()
	return p
}

// Mute answers nothing: a peer that authenticates as systemd does and is
// hung from then on.
func Mute(*godbus.Message) ([]any, bool) { return nil, false }

// AddMatchOnly answers the AddMatch call that go-systemd makes on every new
// connection, and nothing else: a systemd that hangs after connecting.
func AddMatchOnly(call *godbus.Message) ([]any, bool) {
	return nil, Member(call) == "AddMatch"
}

// SlowJobs answers AddMatch, and StartUnit with the path of job 7, which
// never ends: no JobRemoved is ever sent for it. It answers nothing else.
func SlowJobs(call *godbus.Message) ([]any, bool) {
	switch Member(call) {
	case "AddMatch":
		return nil, true
	case "StartUnit":
		return []any{godbus.ObjectPath("/org/freedesktop/systemd1/job/7")}, true
	}
	return nil, false
}

// HangUp closes every connection, as a systemd that exits or re-executes
// does.
func (p *Peer) HangUp() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// Called returns the members called so far, in order.
func (p *Peer) Called() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.calls...)
}

// Member returns the name of the method a call calls.
func Member(m *godbus.Message) string {
	s, _ := m.Headers[godbus.FieldMember].Value().(string)
	return s
}

func (p *Peer) serve(c net.Conn) {
	in := bufio.NewReader(c)
	if !p.authenticate(c, in) {
		return
	}
	for {
		call, err := godbus.DecodeMessage(in)
		if err != nil {
			return
		}
		if call.Type != godbus.TypeMethodCall {
			continue
		}
		p.mu.Lock()
		p.calls = append(p.calls, Member(call))
		p.mu.Unlock()
		body, ok := p.answer(call)
		if !ok {
			continue
		}
		reply := &godbus.Message{Type: godbus.TypeMethodReply, Headers: map[godbus.HeaderField]godbus.Variant{
			godbus.FieldReplySerial: godbus.MakeVariant(call.Serial()),
		}, Body: body}
		if len(body) > 0 {
			reply.Headers[godbus.FieldSignature] = godbus.MakeVariant(godbus.SignatureOf(body...))
		}
		p.send(c, reply)
	}
}

// send writes a message with the next serial of this peer. godbus leaves
// a message's serial to the connection that sends it, and keeps it
// unexported, so it is written into the encoded header (bytes 8 to 11).
func (p *Peer) send(c net.Conn, m *godbus.Message) {
	var b bytes.Buffer
	if err := m.EncodeTo(&b, binary.LittleEndian); err != nil {
		p.t.Errorf("fake peer: encode %v: %v", m, err)
		return
	}
	p.mu.Lock()
	p.serial++
	binary.LittleEndian.PutUint32(b.Bytes()[8:12], p.serial)
	p.mu.Unlock()
	c.Write(b.Bytes())
}

// authenticate plays the server's side of the authentication that godbus
// (and systemd) speak: NUL, AUTH, REJECTED with the mechanisms, AUTH
// EXTERNAL with the uid, OK, NEGOTIATE_UNIX_FD, AGREE_UNIX_FD, BEGIN.
func (p *Peer) authenticate(c net.Conn, in *bufio.Reader) bool {
	if b, err := in.ReadByte(); err != nil || b != 0 {
		return false
	}
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			return false
		}
		var reply string
		switch f := strings.Fields(line); {
		case len(f) == 0:
			return false
		case f[0] == "AUTH" && len(f) == 1:
			reply = "REJECTED EXTERNAL"
		case f[0] == "AUTH" && f[1] == "EXTERNAL":
			reply = "OK 0123456789abcdef0123456789abcdef"
		case f[0] == "NEGOTIATE_UNIX_FD":
			reply = "AGREE_UNIX_FD"
		case f[0] == "BEGIN":
			return true
		default:
			reply = "ERROR"
		}
		if _, err := io.WriteString(c, reply+"\r\n"); err != nil {
			return false
		}
	}
}
