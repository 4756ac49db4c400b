package member

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// memberConnected is the gauge fedop_member_connected{member}: 1 while a
// member is connected, 0 while it is registered but not, and no series
// once it is removed. It is registered in controller-runtime's registry so
// that the manager's metrics endpoint serves it. It is shared by every
// Registry of the process, as that registry is.
var memberConnected = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "fedop_member_connected",
	Help: "Whether fedop is connected to a member cluster (1) or not (0).",
}, []string{"member"})

func init() {
	metrics.Registry.MustRegister(memberConnected)
}
