package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseItems(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{in: "1-8", want: []int{1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{in: "1-11", want: []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
		{in: "1-6", want: []int{1, 2, 3, 4, 5, 6, 8, 9}},
		{in: "5,6", want: []int{5, 6, 8}},
		{in: "6", want: []int{6}},
		{in: "7", want: []int{7}},
		{in: "8", want: []int{5, 8}},
		{in: "7,8", want: []int{5, 7, 8}},
		{in: "1", want: []int{1, 3, 9}},
		{in: "9", want: []int{1, 3, 9}},
		{in: "10,11", want: []int{10, 11}},
		{in: "3,5", want: []int{1, 3, 5, 8, 9}},
		{in: "1-4", want: []int{1, 2, 3, 4, 9}},
		{in: "2", wantErr: true},
		{in: "4,5", wantErr: true},
		{in: "0", wantErr: true},
		{in: "12", wantErr: true},
		{in: "6-5", wantErr: true},
		{in: "x", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseItems(tt.in)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			var items []int
			for i := 1; i <= lastItem; i++ {
				if got[i] {
					items = append(items, i)
				}
			}
			assert.Equal(t, tt.want, items)
		})
	}
}

func TestGoroutineTrend(t *testing.T) {
	stop := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	series := func(before float64, counts ...float64) []goroutineSample {
		out := []goroutineSample{{at: stop.Add(-time.Millisecond), goroutines: before, scrape: true}}
		for i, c := range counts {
			out = append(out, goroutineSample{at: stop.Add(time.Duration(i+1) * 10 * time.Second), goroutines: c, scrape: true})
		}
		return out
	}
	t.Run("flat with noise", func(t *testing.T) {
		g := goroutineTrend(series(204, 200, 203, 201, 200, 202, 200, 201, 203), stop)
		assert.Equal(t, 8, g.n)
		assert.Equal(t, 204.0, g.before)
		assert.Equal(t, 200.0, g.first)
		assert.Equal(t, 203.0, g.last)
		assert.Equal(t, 203.0, g.maxCount)
		assert.LessOrEqual(t, g.growth, float64(goroutineTolerance))
	})
	t.Run("one per probe leaks", func(t *testing.T) {
		var counts []float64
		for i := range 60 {
			counts = append(counts, 200+float64(i))
		}
		g := goroutineTrend(series(200, counts...), stop)
		assert.Greater(t, g.growth, float64(goroutineTolerance))
		assert.InDelta(t, 6.0, g.perMinute, 0.01)
	})
	t.Run("failed scrapes are left out", func(t *testing.T) {
		s := series(200, 200, 201)
		s = append(s, goroutineSample{at: stop.Add(time.Minute)})
		g := goroutineTrend(s, stop)
		assert.Equal(t, 2, g.n)
		assert.Equal(t, 201.0, g.last)
	})
	t.Run("no samples", func(t *testing.T) {
		assert.Equal(t, trend{}, goroutineTrend(nil, stop))
	})
}

// TestMembersReport checks that missed targets of items 5 and 6 say so in
// the table and are explained, and that a healthy run meets them.
func TestMembersReport(t *testing.T) {
	o := options{members: []string{"k8s-a", "k8s-b"}, items: map[int]bool{5: true, 6: true}, memberRounds: 2, perMember: 6}
	stop := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	rollouts := func(p50 time.Duration, n int) []rolloutResult {
		var out []rolloutResult
		for range n {
			out = append(out, rolloutResult{steps: stepStats{deletions: 24, overheads: []time.Duration{p50, p50, p50 * 2}}})
		}
		return out
	}
	connect := func(n int, all time.Duration) connectRun {
		return connectRun{members: n, up: 60 * time.Millisecond, connected: []time.Duration{all / 2, all}, all: all, rss: float64(n << 20)}
	}
	build := func(connect50, during time.Duration, leak float64) *results {
		var samples []goroutineSample
		for i := range 20 {
			samples = append(samples, goroutineSample{at: stop.Add(time.Duration(i) * 10 * time.Second), goroutines: 200 + leak*float64(i), scrape: true})
		}
		return &results{
			members: membersResult{runs: []connectRun{connect(10, time.Second), connect(10, time.Second), connect(50, connect50), connect(50, connect50)}},
			dead: deadResult{members: make([]string, 10), dead: "bench-m07", before: rollouts(20*time.Millisecond, 5), after: rollouts(20*time.Millisecond, 5),
				during: rollouts(during, 40), samples: samples, stoppedAt: stop, period: 200 * time.Second},
		}
	}
	met := func(rows []row) map[string]string {
		out := map[string]string{}
		for _, r := range rows {
			out[r.item+" "+strings.Fields(r.measure)[0]+" "+strings.Fields(r.measure)[1]] += r.met
		}
		return out
	}

	good := build(2*time.Second, 21*time.Millisecond, 0)
	rows := good.rows(o)
	assert.Equal(t, map[string]string{"1-3 step overhead,": "-", "4 memory per": "-", "5 manager start": "-yes", "5 manager RSS": "-",
		"6 step overhead": "yes", "6 manager goroutines": "yes", "6 stopped member": "-", "7 discovery: a": "-", "8 freshness: probe": "-",
		"10 manager start": "-", "11 FederationClusters upgraded": "-"}, met(rows))

	bad := build(20*time.Second, 40*time.Millisecond, 1)
	rows = bad.rows(o)
	assert.Equal(t, "-NO", met(rows)["5 manager start"])
	assert.Equal(t, "NO", met(rows)["6 step overhead"])
	assert.Equal(t, "NO", met(rows)["6 manager goroutines"])
	bad.members.profileNote = "no profile: test"
	md := bad.markdown(o, rows)
	assert.Contains(t, md, "## Targets missed")
	assert.Contains(t, md, "no profile: test")
	assert.Contains(t, md, "## 5. Members")
	assert.Contains(t, md, "## 6. A dead member")
}
