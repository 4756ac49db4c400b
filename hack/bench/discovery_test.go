package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReplacementLatency(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	members := []string{"k8s-a", "k8s-b"}
	tests := []struct {
		name     string
		listed   map[string]time.Time
		want     time.Duration
		ok       bool
		early    int
		memberA  time.Duration
		memberOK bool
	}{
		{
			name:   "the last member decides",
			listed: map[string]time.Time{"k8s-a": at(12), "k8s-b": at(30)},
			want:   30 * time.Millisecond, ok: true, memberA: 12 * time.Millisecond, memberOK: true,
		},
		{
			name:   "a member that listed the IP before the pod watch saw it counts 0",
			listed: map[string]time.Time{"k8s-a": at(-5), "k8s-b": at(-2)},
			want:   0, ok: true, early: 2, memberA: 0, memberOK: true,
		},
		{
			name:   "a member that never listed it: no latency",
			listed: map[string]time.Time{"k8s-b": at(8)},
			ok:     false,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := replacement{member: "k8s-a", pod: "disc-pd-0", oldIP: "10.241.0.5", newIP: "10.241.0.9", ipSeen: t0, listed: tc.listed}
			got, ok := r.latency(members)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.early, r.early())
			a, aok := r.memberLatency("k8s-a")
			assert.Equal(t, tc.memberOK, aok)
			assert.Equal(t, tc.memberA, a)
		})
	}

	d := discoveryResult{members: members, replacements: []replacement{
		{member: "k8s-a", ipSeen: t0, listed: map[string]time.Time{"k8s-a": at(10), "k8s-b": at(40)}},
		{member: "k8s-b", ipSeen: t0, listed: map[string]time.Time{"k8s-a": at(50), "k8s-b": at(20)}},
		{member: "k8s-b", ipSeen: t0, listed: map[string]time.Time{"k8s-a": at(70)}},
	}}
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{40 * ms, 50 * ms}, d.latencies(), "the third never reached k8s-b")
	assert.Equal(t, []time.Duration{10 * ms, 20 * ms}, d.memberLatencies(true))
	assert.Equal(t, []time.Duration{40 * ms, 50 * ms, 70 * ms}, d.memberLatencies(false))
}

func TestEndpointSliceWrites(t *testing.T) {
	metrics := func(apply, del, get, podDeletes int) scrape {
		series := func(group, resource, scope, verb string, v int) string {
			return `apiserver_request_total{code="200",component="apiserver",dry_run="",group="` + group + `",resource="` + resource +
				`",scope="` + scope + `",subresource="",verb="` + verb + `",version="v1"} ` + strconv.Itoa(v) + "\n"
		}
		in := "# TYPE apiserver_request_total counter\n" +
			series("discovery.k8s.io", "endpointslices", "resource", "APPLY", apply) +
			series("discovery.k8s.io", "endpointslices", "resource", "DELETE", del) +
			series("discovery.k8s.io", "endpointslices", "namespace", "LIST", get) +
			series("", "pods", "resource", "DELETE", podDeletes)
		samples, err := parseText(strings.NewReader(in))
		require.NoError(t, err)
		return scrape{samples: samples}
	}
	assert.Equal(t, map[string]float64{"APPLY": 7, "DELETE": 1}, endpointSliceWrites(metrics(7, 1, 100, 9)), "reads and other resources are left out")

	before := map[string]scrape{"k8s-a": metrics(10, 1, 5, 0), "k8s-b": metrics(20, 0, 5, 0)}
	after := map[string]scrape{"k8s-a": metrics(40, 1, 50, 30), "k8s-b": metrics(50, 2, 90, 0)}
	w := writeDelta(before, after)
	assert.Equal(t, map[string]map[string]float64{"k8s-a": {"APPLY": 30}, "k8s-b": {"APPLY": 30, "DELETE": 2}}, w)
	assert.Equal(t, 62.0, sumWrites(w))

	// Ten pods replaced, two of them given their old IP again: the writes
	// are divided by every replacement.
	d := discoveryResult{writes: w, replacements: make([]replacement, 8), reused: 2}
	total, byMember, byVerb := d.writesPerReplacement()
	assert.InDelta(t, 6.2, total, 1e-9)
	assert.InDelta(t, 3.0, byMember["k8s-a"], 1e-9)
	assert.InDelta(t, 3.2, byMember["k8s-b"], 1e-9)
	assert.InDelta(t, 6.0, byVerb["APPLY"], 1e-9)
	assert.InDelta(t, 0.2, byVerb["DELETE"], 1e-9)
	assert.Equal(t, "APPLY 6.00, DELETE 0.20", formatCounts(byVerb))
	assert.Equal(t, "none", formatCounts(nil))
}
