package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fedop-io/fedop/e2e"
)

func TestComputeSteps(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	old := func(cluster, name string, deleted int) podRecord {
		return podRecord{Member: cluster, Name: name, UID: types.UID(name + "-old"),
			FirstSeen: at(-10000), ReadyAt: at(-9000), DeletedAt: at(deleted), GoneAt: at(deleted + 10)}
	}
	repl := func(cluster, name string, created, ready int) podRecord {
		r := podRecord{Member: cluster, Name: name, UID: types.UID(name + "-new"), FirstSeen: at(created)}
		if ready >= 0 {
			r.ReadyAt = at(ready)
		}
		return r
	}
	tests := []struct {
		name      string
		recs      []podRecord
		deletions int
		overheads []time.Duration
		overlaps  int
	}{
		{
			name: "one pod at a time across clusters",
			recs: []podRecord{
				old("a", "p-1", 0), repl("a", "p-1", 20, 30),
				old("b", "p-2", 45), repl("b", "p-2", 60, 70),
				old("a", "p-0", 100), repl("a", "p-0", 120, 130),
			},
			deletions: 3,
			overheads: []time.Duration{15 * time.Millisecond, 30 * time.Millisecond},
		},
		{
			// podwatch.Steps ends this step with the pod gone; in an
			// upgrade every pod is replaced, so for the benchmark it is an
			// overlap. The rest of the rule is podwatch's, tested there.
			name: "a pod gone with no replacement in its cluster is an overlap",
			recs: []podRecord{
				old("a", "p-1", 0), repl("b", "p-1", 20, 30),
				old("a", "p-0", 50),
			},
			deletions: 2,
			overlaps:  1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := computeSteps(tc.recs, t0)
			assert.Equal(t, tc.deletions, st.deletions)
			assert.Equal(t, tc.overheads, st.overheads)
			assert.Equal(t, tc.overlaps, st.overlaps)
		})
	}
}

func TestPercentileAndMedian(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		var out []time.Duration
		for _, x := range xs {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	ds := ms(50, 10, 40, 20, 30)
	assert.Equal(t, 30*time.Millisecond, e2e.Percentile(ds, 50))
	assert.Equal(t, 50*time.Millisecond, e2e.Percentile(ds, 90))
	assert.Equal(t, 50*time.Millisecond, e2e.Percentile(ds, 100))
	assert.Equal(t, time.Duration(0), e2e.Percentile(nil, 50))
	assert.Equal(t, 30*time.Millisecond, median(ds))
	assert.Equal(t, 2.5, median([]float64{4, 1, 2, 3}))
}

func TestParseText(t *testing.T) {
	in := `# HELP rest_client_requests_total Number of HTTP requests.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:32750",method="GET"} 12
rest_client_requests_total{code="201",host="127.0.0.1:32764",method="POST"} 3
rest_client_requests_total{code="409",host="127.0.0.1:32764",method="PUT"} 1
weird{l="a \"quoted\", comma\n"} 1.5e+06
go_goroutines 128
# TYPE fedop_rollout_step_overhead_seconds histogram
fedop_rollout_step_overhead_seconds_bucket{le="0.1"} 3
fedop_rollout_step_overhead_seconds_bucket{le="+Inf"} 4
fedop_rollout_step_overhead_seconds_sum 0.25
fedop_rollout_step_overhead_seconds_count 4
`
	samples, err := parseText(strings.NewReader(in))
	require.NoError(t, err)
	// Families come out in no particular order; the histogram is flattened
	// into its buckets, _sum and _count.
	require.Len(t, samples, 9)
	s := scrape{samples: samples}
	v, ok := s.sum("weird", map[string]string{"l": "a \"quoted\", comma\n"})
	assert.True(t, ok)
	assert.Equal(t, 1.5e6, v)
	v, ok = s.sum("go_goroutines", nil)
	assert.True(t, ok)
	assert.Equal(t, 128.0, v)
	v, _ = s.sum("fedop_rollout_step_overhead_seconds_sum", nil)
	assert.Equal(t, 0.25, v)
	v, _ = s.sum("fedop_rollout_step_overhead_seconds_count", nil)
	assert.Equal(t, 4.0, v)
	v, _ = s.sum("fedop_rollout_step_overhead_seconds_bucket", map[string]string{"le": "0.1"})
	assert.Equal(t, 3.0, v)

	hosts := map[string]string{"127.0.0.1:32764": "host", "127.0.0.1:32750": "k8s-a"}
	var firstTwo []sample
	for _, x := range samples {
		if x.name == "rest_client_requests_total" && x.labels["method"] != "PUT" {
			firstTwo = append(firstTwo, x)
		}
	}
	before := scrape{samples: firstTwo}
	d := requestDelta(before, s, hosts)
	assert.Equal(t, map[reqKey]float64{{"host", "PUT", "409"}: 1}, d)
	c := countRequests(s.requests(hosts))
	assert.Equal(t, requestCounts{hostWrites: 4, memberReads: 12}, c)

	_, err = parseText(strings.NewReader(`bad{l="x} 1`))
	assert.Error(t, err)
}
