package controller

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// The rollout of each HostHooks, as its status says, in controller-runtime's
// registry: served with the manager's own metrics (--metrics-addr).
var (
	rolloutNodes = map[string]*prometheus.GaugeVec{}
	rolloutState = map[string]*prometheus.GaugeVec{}
)

func init() {
	gauge := func(name, help string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"hosthooks"})
		metrics.Registry.MustRegister(g)
		return g
	}
	for _, n := range []string{"matched", "updated", "succeeded", "failed"} {
		rolloutNodes[n] = gauge("hostprov_hosthooks_"+n+"_nodes", "Nodes of the HostHooks' status: "+n+".")
	}
	for _, c := range []string{v1alpha1.ConditionPaused, v1alpha1.ConditionComplete, v1alpha1.ConditionDegraded, v1alpha1.ConditionStalled} {
		rolloutState[c] = gauge("hostprov_hosthooks_rollout_"+strings.ToLower(c),
			"1 when the HostHooks' rollout is "+strings.ToLower(c)+" (its condition "+c+" is True), else 0.")
	}
}

// recordRollout sets the gauges of the HostHooks named hh to its status st.
func recordRollout(hh string, st *v1alpha1.HostHooksStatus) {
	rolloutNodes["matched"].WithLabelValues(hh).Set(float64(st.MatchedNodes))
	rolloutNodes["updated"].WithLabelValues(hh).Set(float64(st.UpdatedNodes))
	rolloutNodes["succeeded"].WithLabelValues(hh).Set(float64(st.SucceededNodes))
	rolloutNodes["failed"].WithLabelValues(hh).Set(float64(st.FailedNodes))
	for c, g := range rolloutState {
		v := 0.0
		if meta.IsStatusConditionTrue(st.Conditions, c) {
			v = 1
		}
		g.WithLabelValues(hh).Set(v)
	}
}

// forgetRollout removes the gauges of the HostHooks named hh, which is
// gone.
func forgetRollout(hh string) {
	for _, g := range rolloutNodes {
		g.DeleteLabelValues(hh)
	}
	for _, g := range rolloutState {
		g.DeleteLabelValues(hh)
	}
}
