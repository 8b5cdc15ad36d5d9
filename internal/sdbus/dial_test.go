package sdbus

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	godbus "github.com/godbus/dbus/v5"
)

func TestDialPrivateFailsFast(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := DialPrivate(ctx, filepath.Join(t.TempDir(), "none.sock")); err == nil {
		t.Fatal("DialPrivate to a missing socket succeeded")
	}
	// A listener that accepts but never answers: authentication must end
	// with the context.
	sock := filepath.Join(t.TempDir(), "mute.sock")
	l, err := netListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	short, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	t0 := time.Now()
	if _, err := DialPrivate(short, sock); err == nil {
		t.Fatal("DialPrivate to a mute peer succeeded")
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("DialPrivate to a mute peer took %v; the context allowed 200ms", d)
	}
}

// TestJobSignals: a Manager's connection hands go-systemd JobRemoved and
// nothing else of what systemd sends, and closes go-systemd's channel when
// the connection ends (which ends every job wait).
func TestJobSignals(t *testing.T) {
	h := newJobSignals(false)
	ch := make(chan *godbus.Signal, 10)
	h.AddSignal(ch)
	for _, s := range []struct{ iface, member string }{
		{"org.freedesktop.DBus.Properties", "PropertiesChanged"},
		{"org.freedesktop.systemd1.Manager", "UnitNew"},
		{"org.freedesktop.systemd1.Manager", "JobNew"},
		{"org.freedesktop.systemd1.Manager", "JobRemoved"},
		{"org.example.Other", "JobRemoved"},
	} {
		h.DeliverSignal(s.iface, s.member, &godbus.Signal{Name: s.iface + "." + s.member,
			Path: "/org/freedesktop/systemd1", Body: []any{uint32(7), godbus.ObjectPath("/org/freedesktop/systemd1/job/7"), "a.service", "done"}})
	}
	select {
	case s := <-ch:
		if s.Name != "org.freedesktop.systemd1.Manager.JobRemoved" {
			t.Fatalf("got %s; want JobRemoved first", s.Name)
		}
	default:
		t.Fatal("JobRemoved was not handed on")
	}
	select {
	case s := <-ch:
		t.Fatalf("got %s too; want JobRemoved only", s.Name)
	default:
	}
	h.Terminate()
	if _, ok := <-ch; ok {
		t.Fatal("the channel got a signal after Terminate; want it closed")
	}
}

// TestUnitChangeSignals: the connection of a Manager that follows units
// (DialUnitChanges) hands on their PropertiesChanged too, and still drops
// the rest.
func TestUnitChangeSignals(t *testing.T) {
	h := newJobSignals(true)
	ch := make(chan *godbus.Signal, 10)
	h.AddSignal(ch)
	for _, s := range []struct{ iface, member string }{
		{"org.freedesktop.systemd1.Manager", "UnitNew"},
		{"org.freedesktop.DBus.Properties", "PropertiesChanged"},
		{"org.freedesktop.systemd1.Manager", "JobRemoved"},
	} {
		h.DeliverSignal(s.iface, s.member, &godbus.Signal{Name: s.iface + "." + s.member, Path: "/org/freedesktop/systemd1/unit/a_2eservice"})
	}
	var got []string
	for len(ch) > 0 {
		got = append(got, (<-ch).Name)
	}
	if len(got) != 2 || got[0] != "org.freedesktop.DBus.Properties.PropertiesChanged" || got[1] != "org.freedesktop.systemd1.Manager.JobRemoved" {
		t.Fatalf("handed on %v; want PropertiesChanged and JobRemoved", got)
	}
}
