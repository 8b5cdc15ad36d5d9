package agent

// Reboots for hooks that declare disruption: Reboot. As kured does, one
// node at a time: before it drains for such a hook, the agent takes the
// reboot lock of the hook's HostHooks, a coordination.k8s.io Lease named
// hostprov-reboot-HOSTHOOKS whose holder is the node; a node that finds
// it held by another waits (its NodeHooks says for whom). After the apply
// it records the boot it asks to end (the kernel's boot ID) in the state
// directory, asks systemd to reboot, and does nothing more. The agent that
// starts after the reboot finds the record with another boot ID: it waits
// until its Node is Ready, uncordons it, releases the locks and removes
// the record, and the sync that follows reports the hooks applied. A
// record of the current boot is a reboot still to come, never a reason to
// ask for another: a reboot never loops.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LeasePrefix starts the name of a HostHooks' reboot lock.
const LeasePrefix = "hostprov-reboot-"

// DefaultLeaseNamespace is where the reboot locks are when the agent is
// told no namespace.
const DefaultLeaseNamespace = "hostprov-system"

// bootIDFile holds the kernel's random ID of the current boot.
const bootIDFile = "/proc/sys/kernel/random/boot_id"

// rebootRecordFile, in the state directory, is the record of a reboot the
// agent asked for.
const rebootRecordFile = "agent-reboot.json"

// ReadBootID reads the current boot's ID.
func ReadBootID() (string, error) {
	b, err := os.ReadFile(bootIDFile)
	if err != nil {
		return "", fmt.Errorf("the boot ID: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// rebootRecord is what the agent keeps across the reboot it asks for.
type rebootRecord struct {
	// Boot is the ID of the boot the reboot is to end.
	Boot string `json:"boot"`
	// Locks are the HostHooks whose reboot lock the node holds.
	Locks []string `json:"locks"`
	// Hooks are the hooks that needed it, as "HOSTHOOKS/HOOK".
	Hooks []string `json:"hooks"`
}

// rebooter holds the reboot locks and keeps the record.
type rebooter struct {
	c         client.Client
	node      string
	namespace string
	bootID    func() (string, error)
	record    string // the record's path
}

func leaseName(hostHooks string) string { return LeasePrefix + hostHooks }

// lock takes the reboot locks of the HostHooks named, all or none. It
// returns the holder of one that another node holds ("" when the node has
// them all now).
func (r *rebooter) lock(ctx context.Context, hostHooks []string) (string, error) {
	var taken []string
	for _, hh := range hostHooks {
		holder, err := r.take(ctx, hh)
		if err == nil && holder == "" {
			taken = append(taken, hh)
			continue
		}
		if uerr := r.unlock(context.WithoutCancel(ctx), taken); uerr != nil {
			err = errors.Join(err, uerr)
		}
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("node %s, which holds the reboot lock of HostHooks %s (Lease %s/%s)", holder, hh, r.namespace, leaseName(hh)), nil
	}
	return "", nil
}

// take takes one lock: the Lease is made with the node as its holder, or
// one without a holder (or held by the node already) is taken over. It
// returns the other node that holds it.
func (r *rebooter) take(ctx context.Context, hostHooks string) (string, error) {
	key := client.ObjectKey{Namespace: r.namespace, Name: leaseName(hostHooks)}
	node := r.node
	now := metav1.NowMicro()
	var l coordinationv1.Lease
	err := r.c.Get(ctx, key, &l)
	if apierrors.IsNotFound(err) {
		l = coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels: map[string]string{"app.kubernetes.io/part-of": "hostprov"}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &node, AcquireTime: &now}}
		err = r.c.Create(ctx, &l)
		if apierrors.IsAlreadyExists(err) {
			return r.take(ctx, hostHooks)
		}
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("reboot lock %s: %w", key, err)
	}
	if h := l.Spec.HolderIdentity; h != nil && *h != "" && *h != node {
		return *h, nil
	}
	if h := l.Spec.HolderIdentity; h != nil && *h == node {
		return "", nil
	}
	l.Spec.HolderIdentity, l.Spec.AcquireTime = &node, &now
	// At the resourceVersion read: of two nodes, one takes it.
	if err := r.c.Update(ctx, &l); apierrors.IsConflict(err) {
		return r.take(ctx, hostHooks)
	} else if err != nil {
		return "", fmt.Errorf("reboot lock %s: %w", key, err)
	}
	return "", nil
}

// unlock releases the locks of the HostHooks named that the node holds:
// their Leases are deleted, each at the version that names the node.
func (r *rebooter) unlock(ctx context.Context, hostHooks []string) error {
	var errs []error
	for _, hh := range hostHooks {
		var l coordinationv1.Lease
		err := r.c.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: leaseName(hh)}, &l)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if h := l.Spec.HolderIdentity; h == nil || *h != r.node {
			continue
		}
		err = r.c.Delete(ctx, &l, client.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("release the reboot lock %s: %w", l.Name, err))
		}
	}
	return errors.Join(errs...)
}

// write records the reboot the agent is about to ask for, as a whole
// file (renamed into place), before it asks.
func (r *rebooter) write(rec rebootRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	tmp := r.record + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, r.record)
}

// read returns the record, or nil when there is none.
func (r *rebooter) read() (*rebootRecord, error) {
	b, err := os.ReadFile(r.record)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec rebootRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w (remove it once the node rebooted, to let the agent go on)", r.record, err)
	}
	return &rec, nil
}

func newRebooter(c client.Client, cfg Config) *rebooter {
	return &rebooter{c: c, node: cfg.NodeName, namespace: cfg.LeaseNamespace, bootID: cfg.BootID,
		record: filepath.Join(cfg.Options.StateDirPath(), rebootRecordFile)}
}

// errRebooting is a sync that waits for the node's reboot, or for its
// Node to be Ready after it: the worker tries again with its backoff.
type errRebooting struct{ why string }

func (e *errRebooting) Error() string { return e.why }

// resume looks for a reboot the agent asked for. Of this boot, it is yet
// to come: it is asked for once more by an agent that did not ask yet
// (one that started after asking, before the reboot), and the sync waits.
// Of another boot, it is done: once the Node is Ready again, the agent
// uncordons it, releases the locks and forgets the reboot, and the sync
// goes on.
func (a *Agent) resume(ctx context.Context, sd *Systemd) error {
	rb := a.node.rebooter
	rec, err := rb.read()
	if err != nil || rec == nil {
		return err
	}
	boot, err := rb.bootID()
	if err != nil {
		return err
	}
	if rec.Boot == boot {
		if !a.rebootAsked {
			a.rebootAsked = true
			if err := a.reboot(ctx, sd, rec); err != nil {
				return err
			}
		}
		return &errRebooting{"waiting for the reboot the agent asked for (" + strings.Join(rec.Hooks, ", ") + ")"}
	}
	var n corev1.Node
	if err := rb.c.Get(ctx, client.ObjectKey{Name: a.cfg.NodeName}, &n); err != nil {
		return err
	}
	if !nodeReady(&n) {
		return &errRebooting{"rebooted; waiting for the Node to be Ready"}
	}
	a.cfg.Log.Info("rebooted; the Node is Ready", "hooks", strings.Join(rec.Hooks, ","))
	if err := a.node.drainer.uncordon(ctx); err != nil {
		return err
	}
	if err := rb.unlock(ctx, rec.Locks); err != nil {
		return err
	}
	if err := os.Remove(rb.record); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// reboot asks systemd to reboot the node.
func (a *Agent) reboot(ctx context.Context, sd *Systemd, rec *rebootRecord) error {
	if sd.Reboot == nil {
		return errors.New("the connection to systemd cannot reboot the node: reboot it by hand (systemctl reboot) to finish " + strings.Join(rec.Hooks, ", "))
	}
	a.cfg.Log.Info("rebooting the node", "hooks", strings.Join(rec.Hooks, ","))
	if err := sd.Reboot(ctx); err != nil {
		return fmt.Errorf("reboot: %w", err)
	}
	return nil
}

// nodeReady reports whether the Node's Ready condition is True.
func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
