package federation

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// The labels that name a FederationCluster in fedop's series: its
// namespace and name.
const (
	metricLabelNamespace = "namespace"
	metricLabelName      = "name"
)

// Pod states of fedop_federationcluster_pods.
const (
	podStateDesired = "desired"
	podStateReady   = "ready"
	podStateUpdated = "updated"
)

var (
	// rolloutSteps counts completed steps: a pod replaced, added or removed
	// and observed available (or gone), by FederationCluster and operation.
	rolloutSteps = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fedop_rollout_steps_total",
		Help: "Rollout steps completed: a pod replaced, added or removed, and the result observed.",
	}, []string{metricLabelNamespace, metricLabelName, "operation"})
	// stepOverhead is the time fedop adds between steps: from the previous
	// step's pod becoming available (as this process first knew it:
	// readyClock) to the next deletion issued.
	stepOverhead = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "fedop_rollout_step_overhead_seconds",
		Help:    "Time from the previous step's pod becoming available to the next disruptive action issued.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5, 10},
	})
	// stepPhase splits stepOverhead by where the time went, for the
	// reconciles that issued a step's deletion (stepTimes): queue (from
	// the pod known available to the reconcile's start: the event's
	// delivery and the workqueue), observe (reading the caches), plan
	// (the planner, hooks' answers, status computed), status (the status
	// write before the act; 0 when the step was acknowledged already),
	// act (member writes before the deletion) and delete (the deletion's
	// round trip to the member).
	stepPhase = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "fedop_rollout_step_phase_seconds",
		Help:    "Time of each phase between the previous step's pod becoming available and the next deletion returning: queue, observe, plan, status, act, delete.",
		Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1},
	}, []string{"phase"})
	// statusWrite times the status writes of the rolling controller to
	// the host (record), by when the write is made: "acknowledge",
	// before the act it names, which waits for it; or "record", after the
	// deletion of a step the stored operation acknowledged already
	// (preAcknowledged), which the next reconcile of the same
	// FederationCluster, the one that creates the replacement, waits for.
	statusWrite = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "fedop_status_write_seconds",
		Help:    "Round trip of each FederationCluster status write to the host: acknowledge (before the act it names) or record (after a step's deletion).",
		Buckets: []float64{0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5},
	}, []string{"when"})
	// conditionGauge is 1 for each condition's current status of a
	// FederationCluster and 0 for the other two statuses, as
	// kube-state-metrics exports conditions.
	conditionGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "fedop_federationcluster_condition",
		Help: "The conditions of a FederationCluster: 1 for the status each condition has (True, False or Unknown), 0 for the others.",
	}, []string{metricLabelNamespace, metricLabelName, "type", "status"})
	// podsGauge counts a FederationCluster's pods per member and state, as
	// its status says: desired (spec replicas), ready, updated (at the
	// update revision).
	podsGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "fedop_federationcluster_pods",
		Help: "Pods of a FederationCluster per member cluster and state: desired (spec replicas), ready, updated (at the update revision).",
	}, []string{metricLabelNamespace, metricLabelName, "member", "state"})
)

func init() {
	metrics.Registry.MustRegister(rolloutSteps, stepOverhead, stepPhase, statusWrite, conditionGauge, podsGauge)
}

// exportStatus sets the gauges of FederationCluster key from its status,
// dropping series of members and conditions it no longer has.
func exportStatus(key client.ObjectKey, st *v1alpha1.FederationClusterStatus) {
	var now exportedSeries
	for _, c := range st.Conditions {
		now.conditions = append(now.conditions, c.Type)
		for _, s := range conditionStatuses {
			v := 0.0
			if c.Status == s {
				v = 1
			}
			conditionGauge.WithLabelValues(key.Namespace, key.Name, c.Type, string(s)).Set(v)
		}
	}
	type counts struct{ desired, ready, updated int32 }
	byMember := map[string]*counts{}
	for _, cs := range st.Components {
		for _, ps := range cs.Members {
			c := byMember[ps.Member]
			if c == nil {
				c = &counts{}
				byMember[ps.Member] = c
				now.members = append(now.members, ps.Member)
			}
			c.desired += ps.Replicas
			c.ready += ps.ReadyReplicas
			c.updated += ps.UpdatedReplicas
		}
	}
	for m, c := range byMember {
		podsGauge.WithLabelValues(key.Namespace, key.Name, m, podStateDesired).Set(float64(c.desired))
		podsGauge.WithLabelValues(key.Namespace, key.Name, m, podStateReady).Set(float64(c.ready))
		podsGauge.WithLabelValues(key.Namespace, key.Name, m, podStateUpdated).Set(float64(c.updated))
	}
	exported.mu.Lock()
	before := exported.m[key]
	exported.m[key] = now
	exported.mu.Unlock()
	deleteSeries(key, before, now)
}

// forgetStatus drops every gauge series of FederationCluster key.
func forgetStatus(key client.ObjectKey) {
	exported.mu.Lock()
	before := exported.m[key]
	delete(exported.m, key)
	exported.mu.Unlock()
	deleteSeries(key, before, exportedSeries{})
}

// conditionStatuses are the statuses conditionGauge has a series for, per
// condition.
var conditionStatuses = []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}

// exportedSeries names the gauge series exportStatus set for one
// FederationCluster: its condition types and its members.
type exportedSeries struct {
	conditions, members []string
}

// exported remembers, per FederationCluster, the series exportStatus set,
// so that it deletes exactly those that went. Deleting by a partial match
// (DeletePartialMatch) scans every series of every FederationCluster: with
// 200 of them (make bench's item 11) that was 8% of the manager's CPU.
var exported = struct {
	mu sync.Mutex
	m  map[client.ObjectKey]exportedSeries
}{m: map[client.ObjectKey]exportedSeries{}}

// deleteSeries deletes the series of key that before has and now does not.
func deleteSeries(key client.ObjectKey, before, now exportedSeries) {
	for _, t := range before.conditions {
		if !slices.Contains(now.conditions, t) {
			for _, s := range conditionStatuses {
				conditionGauge.DeleteLabelValues(key.Namespace, key.Name, t, string(s))
			}
		}
	}
	for _, m := range before.members {
		if !slices.Contains(now.members, m) {
			for _, state := range []string{podStateDesired, podStateReady, podStateUpdated} {
				podsGauge.DeleteLabelValues(key.Namespace, key.Name, m, state)
			}
		}
	}
}
