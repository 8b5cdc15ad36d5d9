package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/hostprov/hostprov/internal/sdbus"
	"github.com/hostprov/hostprov/pkg/apply"
)

// interrupt is the cause of a context that a signal ended.
type interrupt struct{ sig syscall.Signal }

func (i interrupt) Error() string {
	switch i.sig {
	case syscall.SIGINT:
		return "interrupted by SIGINT"
	case syscall.SIGTERM:
		return "interrupted by SIGTERM"
	}
	return "interrupted by " + i.sig.String()
}

// signalContext ends when the process gets SIGINT (^C) or SIGTERM (systemd
// stopping the unit that runs hostprov, a shutdown, a fleet tool's
// timeout), with an interrupt as its cause, so that every wait (for the
// lock, for systemd, for a job) ends and the command can say what it left
// behind. A second signal ends the process at once, as if hostprov had no
// handler: no wait can keep it then, and every file it writes is replaced
// by rename, so even that leaves each file old or new.
func signalContext(c *cobra.Command) (context.Context, func()) {
	parent := c.Context()
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	stopped := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			signal.Stop(sigs)
			cancel(interrupt{s.(syscall.Signal)})
		case <-stopped:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(stopped)
		cancel(nil)
	}
}

// interrupted returns the error of a command that a signal ended, saying
// what it left behind, or nil if no signal ended ctx. Its exit code is
// 128 plus the signal's number, as a shell reports a command that the
// signal killed: 130 for SIGINT, 143 for SIGTERM.
func interrupted(ctx context.Context, left string) error {
	var i interrupt
	if !errors.As(context.Cause(ctx), &i) {
		return nil
	}
	return &exitError{code: 128 + int(i.sig), msg: i.Error() + ": " + left}
}

// nothingChanged is what an apply interrupted before it changed anything
// left behind.
const nothingChanged = "nothing was changed"

// interruptedApply says what an apply or remove (the command named cmd)
// that a signal ended while it carried out its plan left behind, from its
// events.
func interruptedApply(cmd string, events []apply.Event) string {
	var ops, units []string
	for _, ev := range events {
		if ev.Action == apply.EvFailed && errors.Is(ev.Err, sdbus.ErrGaveUp) {
			ops = append(ops, ev.Op)
			units = append(units, ev.Unit)
		}
	}
	msg := "hostprov " + cmd + " stopped where it was: each file it touched is whole, in its old or its new " +
		"version, and its state says which"
	if len(units) > 0 {
		what := "job"
		if slices.Equal(ops, slices.Repeat(ops[:1], len(ops))) {
			what = ops[0]
		}
		verb := "goes"
		if len(units) > 1 {
			what, verb = what+"s", "go"
		}
		msg += fmt.Sprintf("; the %s of %s %s on in systemd: check systemctl status %s",
			what, strings.Join(units, ", "), verb, strings.Join(units, " "))
	}
	return msg + ". Run hostprov " + cmd + " again to finish: it goes on from there"
}
