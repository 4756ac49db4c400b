package federation

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// rolloutSteps counts completed steps: a pod replaced, added or removed
	// and observed available (or gone).
	rolloutSteps = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fedop_rollout_steps_total",
		Help: "Rollout steps completed: a pod replaced, added or removed, and the result observed.",
	})
	// stepOverhead is the time fedop adds between steps: from the previous
	// step's pod becoming available (as this process first knew it:
	// readyClock) to the next deletion issued.
	stepOverhead = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "fedop_rollout_step_overhead_seconds",
		Help:    "Time from the previous step's pod becoming available to the next disruptive action issued.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5, 10},
	})
)

func init() {
	metrics.Registry.MustRegister(rolloutSteps, stepOverhead)
}
