package apply_test

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostprov/hostprov/pkg/apply"
)

// TestLockSerializes holds the lock, then checks that a second taker with
// --no-wait fails at once naming the holder, and that one that waits is
// told once and gets the lock when the first lets go.
func TestLockSerializes(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	unlock, err := apply.Lock(ctx, dir, false, func(int) { t.Error("the first taker waited") })
	if err != nil {
		t.Fatal(err)
	}
	_, err = apply.Lock(ctx, dir, true, nil)
	if err == nil || !strings.Contains(err.Error(), "another hostprov apply") || !strings.Contains(err.Error(), "--no-wait") {
		t.Fatalf("--no-wait while locked: %v", err)
	}
	var told atomic.Int32
	var holder atomic.Int32
	got := make(chan func())
	go func() {
		u, err := apply.Lock(ctx, dir, false, func(pid int) { told.Add(1); holder.Store(int32(pid)) })
		if err != nil {
			t.Error(err)
		}
		got <- u
	}()
	select {
	case <-got:
		t.Fatal("the second taker got the lock while the first held it")
	case <-time.After(100 * time.Millisecond):
	}
	unlock()
	select {
	case u := <-got:
		u()
	case <-time.After(5 * time.Second):
		t.Fatal("the second taker did not get the lock after it was released")
	}
	if told.Load() != 1 || int(holder.Load()) != os.Getpid() {
		t.Errorf("waiting told %d times with pid %d, want once with %d", told.Load(), holder.Load(), os.Getpid())
	}
}

func TestLockWaitEndsWithContext(t *testing.T) {
	dir := t.TempDir()
	unlock, err := apply.Lock(context.Background(), dir, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := apply.Lock(ctx, dir, false, nil); err == nil {
		t.Fatal("a cancelled wait got the lock")
	}
}
