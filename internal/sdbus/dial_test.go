package sdbus

import (
	"context"
	"path/filepath"
	"testing"
	"time"
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
