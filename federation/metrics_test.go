package federation

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// seriesOf returns the series of vec that belong to FederationCluster key,
// each as its other labels' values joined by "/", with its value.
func seriesOf(t *testing.T, vec *prometheus.GaugeVec, key client.ObjectKey, other ...string) map[string]float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 1024)
	vec.Collect(ch)
	close(ch)
	out := map[string]float64{}
	for m := range ch {
		var d dto.Metric
		require.NoError(t, m.Write(&d))
		labels := map[string]string{}
		for _, l := range d.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels[metricLabelNamespace] != key.Namespace || labels[metricLabelName] != key.Name {
			continue
		}
		name := ""
		for i, o := range other {
			if i > 0 {
				name += "/"
			}
			name += labels[o]
		}
		out[name] = d.GetGauge().GetValue()
	}
	return out
}

// TestExportStatus: the gauges follow a FederationCluster's status; a
// condition or member it no longer has loses its series, another
// FederationCluster's series stay, and forgetStatus drops them all.
func TestExportStatus(t *testing.T) {
	key := client.ObjectKey{Namespace: "metrics-test", Name: "demo"}
	other := client.ObjectKey{Namespace: "metrics-test", Name: "demo-2"}
	status := func(conditions map[string]metav1.ConditionStatus, members ...string) *v1alpha1.FederationClusterStatus {
		st := &v1alpha1.FederationClusterStatus{}
		for typ, s := range conditions {
			st.Conditions = append(st.Conditions, metav1.Condition{Type: typ, Status: s})
		}
		cs := v1alpha1.ComponentStatus{Name: "pd"}
		for i, m := range members {
			cs.Members = append(cs.Members, v1alpha1.PlacementStatus{Member: m, Replicas: int32(i + 1), ReadyReplicas: int32(i)})
		}
		st.Components = []v1alpha1.ComponentStatus{cs}
		return st
	}
	t.Cleanup(func() { forgetStatus(key); forgetStatus(other) })

	exportStatus(other, status(map[string]metav1.ConditionStatus{"Ready": metav1.ConditionTrue}, "a"))
	exportStatus(key, status(map[string]metav1.ConditionStatus{"Ready": metav1.ConditionFalse, "Progressing": metav1.ConditionTrue}, "a", "b"))
	assert.Equal(t, map[string]float64{
		"Ready/True": 0, "Ready/False": 1, "Ready/Unknown": 0,
		"Progressing/True": 1, "Progressing/False": 0, "Progressing/Unknown": 0,
	}, seriesOf(t, conditionGauge, key, "type", "status"))
	assert.Equal(t, map[string]float64{
		"a/desired": 1, "a/ready": 0, "a/updated": 0,
		"b/desired": 2, "b/ready": 1, "b/updated": 0,
	}, seriesOf(t, podsGauge, key, "member", "state"))

	// Progressing and member a went.
	exportStatus(key, status(map[string]metav1.ConditionStatus{"Ready": metav1.ConditionTrue}, "b"))
	assert.Equal(t, map[string]float64{"Ready/True": 1, "Ready/False": 0, "Ready/Unknown": 0},
		seriesOf(t, conditionGauge, key, "type", "status"))
	assert.Equal(t, map[string]float64{"b/desired": 1, "b/ready": 0, "b/updated": 0},
		seriesOf(t, podsGauge, key, "member", "state"))

	forgetStatus(key)
	assert.Empty(t, seriesOf(t, conditionGauge, key, "type", "status"))
	assert.Empty(t, seriesOf(t, podsGauge, key, "member", "state"))
	assert.Len(t, seriesOf(t, conditionGauge, other, "type", "status"), 3, "another FederationCluster's series stay")
	assert.Len(t, seriesOf(t, podsGauge, other, "member", "state"), 3)
}
