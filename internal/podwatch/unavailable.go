package podwatch

import "time"

// Shortfall returns the unavailable count of a set of placements: the sum
// over the keys of desired of max(0, desired - available), both counts of
// pods by placement key (Set.Available). A pod not Ready, terminating or
// missing counts once.
func Shortfall(desired, available map[string]int) int {
	n := 0
	for key, want := range desired {
		n += max(0, want-available[key])
	}
	return n
}

// Gauge is a count over time with its maximum since the last Reset: the
// unavailable count, say.
type Gauge struct {
	// Now is the count now; Max the maximum since the last Reset, first
	// reached at MaxAt.
	Now, Max int
	MaxAt    time.Time
}

// Set sets the count to n at at.
func (g *Gauge) Set(n int, at time.Time) {
	g.Now = n
	if n > g.Max {
		g.Max, g.MaxAt = n, at
	}
}

// Reset restarts the maximum from the count now, at at.
func (g *Gauge) Reset(at time.Time) { g.Max, g.MaxAt = g.Now, at }
