//go:build kube

package cli

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	clientretry "k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// retryUserAgent names retry's writes: the field manager of spec.retry,
// and the client in the API server's logs and audit.
const retryUserAgent = "hostprov-retry"

func newRetry() *cobra.Command {
	var kubeconfig, output string
	c := &cobra.Command{
		Use:   "retry HOSTHOOKS [--kubeconfig FILE] [-o text|json]",
		Short: "Start again the failed hooks of a HostHooks on the nodes that failed them (Kubernetes)",
		Long: `retry increases the HostHooks' spec.retry by one. Every node that is approved for its
current hooks and failed them then starts again, once, the hooks whose start failed:
its agent records in the node's NodeHooks status.retry the retry it carried out, so
that neither a restart of the agent nor another event runs them twice. The hooks'
hash does not change: nothing rolls out, and nodes that succeeded, or have not applied
the current hooks yet, are left alone. A node that now succeeds no longer counts
against the rollout's failureThreshold, and a rollout that the threshold stopped goes
on once no more nodes failed than it allows.

The update is conflict-safe: it is made against the version read, and read again when
someone else changed the HostHooks in between. It needs the right to patch HostHooks
(the ClusterRole hostprov-hosthooks-author of deploy/rbac-users.yaml has it).

It reaches the API server as kubectl does: --kubeconfig, else $KUBECONFIG, else
~/.kube/config, else the pod's service account. -o json prints
{"hostHooks", "retry", "previous", "failedNodes"}: the new and the old spec.retry,
and the failed nodes the HostHooks' status counted when it was read.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &exitError{code: ExitInvalid, cmd: "hostprov retry",
					msg: "give the name of one HostHooks (kubectl get hosthooks lists them)"}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if output != outputText && output != outputJSON {
				return invalid("unknown -o %q: use text or json", output)
			}
			cfg, err := restConfig(kubeconfig)
			if err != nil {
				return failure("retry: the cluster's configuration: %v (give --kubeconfig FILE or set KUBECONFIG)", err)
			}
			cfg.UserAgent = retryUserAgent
			res, err := retryHostHooks(c.Context(), cfg, args[0])
			if err != nil {
				return err
			}
			if output == outputJSON {
				return writeJSON(c.OutOrStdout(), res)
			}
			fmt.Fprintf(c.OutOrStdout(), "hosthooks/%s: spec.retry %d (was %d): ", res.HostHooks, res.Retry, res.Previous)
			if res.FailedNodes == 0 {
				fmt.Fprintln(c.OutOrStdout(), "no node failed the current hooks by its status, so none starts anything")
			} else {
				fmt.Fprintf(c.OutOrStdout(), "the nodes that failed the current hooks (%d by its status) start their failed hooks again\n", res.FailedNodes)
			}
			return nil
		},
	}
	c.Flags().StringVar(&kubeconfig, "kubeconfig", "", "the cluster's kubeconfig `FILE` (default: $KUBECONFIG, ~/.kube/config, or the pod's service account)")
	registerOutput(c, &output)
	return c
}

// retryResult is what retry did; its JSON names are stable.
type retryResult struct {
	HostHooks   string `json:"hostHooks"`
	Retry       int32  `json:"retry"`
	Previous    int32  `json:"previous"`
	FailedNodes int32  `json:"failedNodes"`
}

// retryHostHooks increases the spec.retry of the HostHooks name by one: a
// merge patch that carries the resourceVersion it read, which the API
// server refuses with a conflict when the HostHooks changed since; then it
// reads it again and tries once more. The patch touches spec.retry only.
func retryHostHooks(ctx context.Context, cfg *rest.Config, name string) (retryResult, error) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return retryResult{}, failure("retry: %v", err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return retryResult{}, failure("retry: %v", err)
	}
	var res retryResult
	err = clientretry.RetryOnConflict(clientretry.DefaultRetry, func() error {
		var hh v1alpha1.HostHooks
		if err := cl.Get(ctx, client.ObjectKey{Name: name}, &hh); err != nil {
			return err
		}
		if hh.Spec.Retry == math.MaxInt32 {
			return errRetryMax
		}
		base := hh.DeepCopy()
		hh.Spec.Retry++
		if err := cl.Patch(ctx, &hh, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return err
		}
		res = retryResult{HostHooks: hh.Name, Retry: hh.Spec.Retry, Previous: base.Spec.Retry, FailedNodes: hh.Status.FailedNodes}
		return nil
	})
	switch {
	case err == nil:
		return res, nil
	case errors.Is(err, errRetryMax):
		return res, invalid("retry: HostHooks %s: spec.retry is at its largest, %d: set it to 0 (kubectl patch hosthooks %s --type merge -p '{\"spec\":{\"retry\":0}}'), which is a retry too", name, math.MaxInt32, name)
	case apierrors.IsNotFound(err):
		return res, failure("retry: no HostHooks %s in the cluster (kubectl get hosthooks lists them)", name)
	case apierrors.IsForbidden(err):
		return res, failure("retry: HostHooks %s: %v (patching a HostHooks needs the ClusterRole hostprov-hosthooks-author of deploy/rbac-users.yaml, or its rights)", name, err)
	}
	return res, failure("retry: HostHooks %s: %v", name, err)
}

var errRetryMax = errors.New("spec.retry is at its largest")
