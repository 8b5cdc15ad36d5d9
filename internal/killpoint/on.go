//go:build killpoints

package killpoint

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// Enabled says whether this build has kill points.
const Enabled = true

var (
	kind  string
	at    int64
	count atomic.Int64
)

func init() {
	v := os.Getenv(Env)
	if v == "" {
		return
	}
	k, n, ok := strings.Cut(v, ":")
	i, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil || i < 1 {
		fmt.Fprintf(os.Stderr, "%s=%q: want KIND:N with N from 1\n", Env, v)
		os.Exit(3)
	}
	kind, at = k, i
}

// At kills the process before the Nth step of the kind HOSTPROV_KILLPOINT
// names ("" stands for every kind).
func At(k string) {
	if at == 0 || kind != "" && k != kind {
		return
	}
	if count.Add(1) == at {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}
