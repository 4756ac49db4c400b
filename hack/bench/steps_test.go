package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
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

// TestRequestCounts checks how the manager's request counter becomes item
// 3's figures: API servers mapped to clusters by address, a window's delta
// by series, and writes and reads split by host and members.
func TestRequestCounts(t *testing.T) {
	in := `# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:32750",method="GET"} 12
rest_client_requests_total{code="201",host="127.0.0.1:32764",method="POST"} 3
rest_client_requests_total{code="409",host="127.0.0.1:32764",method="PUT"} 1
`
	samples, err := parseText(strings.NewReader(in))
	require.NoError(t, err)
	s := scrape{samples: samples}
	hosts := map[string]string{"127.0.0.1:32764": "host", "127.0.0.1:32750": "k8s-a"}
	var firstTwo []sample
	for _, x := range samples {
		if x.labels["method"] != "PUT" {
			firstTwo = append(firstTwo, x)
		}
	}
	assert.Equal(t, map[reqKey]float64{{"host", "PUT", "409"}: 1}, requestDelta(scrape{samples: firstTwo}, s, hosts))
	assert.Equal(t, requestCounts{hostWrites: 4, memberReads: 12}, countRequests(s.requests(hosts)))
}
