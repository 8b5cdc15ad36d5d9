package sdbus

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

// fakePeer listens on a unix socket and plays systemd's side of the private
// socket as far as a test needs: it completes the EXTERNAL authentication
// as systemd does, then hands every method call to answer, which returns
// the reply's body (nil for an empty reply) or ok false to leave the call
// unanswered, as a hung systemd does. answer may also call hangUp.
type fakePeer struct {
	t      *testing.T
	socket string
	answer func(p *fakePeer, call *godbus.Message) (body []any, ok bool)

	mu     sync.Mutex
	conns  []net.Conn
	calls  []string // the members called, in order
	serial uint32
}

// newFakePeer starts a fakePeer in a temporary directory; it stops when the
// test ends.
func newFakePeer(t *testing.T, answer func(p *fakePeer, call *godbus.Message) ([]any, bool)) *fakePeer {
	t.Helper()
	p := &fakePeer{t: t, socket: filepath.Join(t.TempDir(), "private"), answer: answer}
	l, err := net.Listen("unix", p.socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		l.Close()
		p.hangUp()
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

// answerAddMatch answers the AddMatch call that go-systemd makes on every
// new connection, and nothing else.
func answerAddMatch(_ *fakePeer, call *godbus.Message) ([]any, bool) {
	return nil, member(call) == "AddMatch"
}

// hangUp closes every connection, as a systemd that exits or re-executes
// does.
func (p *fakePeer) hangUp() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// called returns the members called so far.
func (p *fakePeer) called() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.calls...)
}

func member(m *godbus.Message) string {
	s, _ := m.Headers[godbus.FieldMember].Value().(string)
	return s
}

func (p *fakePeer) serve(c net.Conn) {
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
		p.calls = append(p.calls, member(call))
		p.mu.Unlock()
		body, ok := p.answer(p, call)
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
func (p *fakePeer) send(c net.Conn, m *godbus.Message) {
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
func (p *fakePeer) authenticate(c net.Conn, in *bufio.Reader) bool {
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
