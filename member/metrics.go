package member

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// metricLabelMember is the label that names the member cluster of a
// series.
const metricLabelMember = "member"

// memberConnected is the gauge fedop_member_connected{member}: 1 while a
// member is connected, 0 while it is registered but not, and no series
// once it is removed. It is registered in controller-runtime's registry so
// that the manager's metrics endpoint serves it. It is shared by every
// Registry of the process, as that registry is.
var memberConnected = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "fedop_member_connected",
	Help: "Whether fedop is connected to a member cluster (1) or not (0).",
}, []string{metricLabelMember})

// probeDuration is fedop_member_probe_duration_seconds{member}: how long
// each /readyz probe took, failed ones included.
var probeDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "fedop_member_probe_duration_seconds",
	Help:    "Duration of the /readyz probes of a member cluster's API server.",
	Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5},
}, []string{metricLabelMember})

// probeFailures is fedop_member_probe_failures_total{member,reason}:
// failed probes by reason (Timeout, Connection, NotReady).
var probeFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "fedop_member_probe_failures_total",
	Help: "Failed /readyz probes of a member cluster's API server, by reason: Timeout, Connection or NotReady.",
}, []string{metricLabelMember, "reason"})

// credentialsExpiry is fedop_member_credentials_expiry_timestamp_seconds
// {member}: when the credentials of the kubeconfig in use expire, in
// seconds since the epoch (the token's exp claim, read unverified, or the
// client certificate's NotAfter); no series when unknown. Alert on
// `fedop_member_credentials_expiry_timestamp_seconds - time() < 3600`.
var credentialsExpiry = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "fedop_member_credentials_expiry_timestamp_seconds",
	Help: "When the credentials fedop uses for a member cluster expire, in seconds since the epoch.",
}, []string{"member"})

func init() {
	metrics.Registry.MustRegister(memberConnected, probeDuration, probeFailures, credentialsExpiry)
}
