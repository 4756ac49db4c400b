package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// apiserverScrape is a kube-apiserver's request counter at at: readyz
// probes, scrapes of /metrics, and other requests split over two series.
func apiserverScrape(t *testing.T, at time.Time, readyz, metrics, leases, lists float64) scrape {
	t.Helper()
	series := func(labels string, v float64) string {
		return "apiserver_request_total{" + labels + "} " + strconv.FormatFloat(v, 'g', -1, 64) + "\n"
	}
	in := "# TYPE apiserver_request_total counter\n" +
		series(`code="200",component="",dry_run="",group="",resource="",scope="",subresource="/readyz",verb="GET",version=""`, readyz) +
		series(`code="200",component="",dry_run="",group="",resource="",scope="",subresource="/metrics",verb="GET",version=""`, metrics) +
		series(`code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",`+
			`verb="PUT",version="v1"`, leases) +
		series(`code="200",component="apiserver",dry_run="",group="",resource="pods",scope="cluster",subresource="",verb="LIST",version="v1"`, lists) +
		"# TYPE go_goroutines gauge\ngo_goroutines 300\n"
	samples, err := parseText(strings.NewReader(in))
	require.NoError(t, err)
	return scrape{at: at, samples: samples}
}

func TestRequestRates(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	p, o := apiserverRequests(apiserverScrape(t, t0, 40, 7, 3, 2))
	assert.Equal(t, 40.0, p)
	assert.Equal(t, 5.0, o, "the benchmark's scrapes of /metrics are not counted")

	before := []scrape{apiserverScrape(t, t0, 100, 1, 10, 0), apiserverScrape(t, t0.Add(time.Second), 200, 1, 10, 0), apiserverScrape(t, t0, 0, 0, 0, 0)}
	after := []scrape{
		apiserverScrape(t, t0.Add(20*time.Second), 140, 2, 12, 0),
		apiserverScrape(t, t0.Add(21*time.Second), 239, 2, 11, 1),
		apiserverScrape(t, t0, 9, 0, 0, 0), // no time between the two: left out
	}
	probes, others := requestRates(before, after)
	assert.Equal(t, []float64{2, 1.95}, probes)
	assert.Equal(t, []float64{0.1, 0.1}, others)
}

func TestProbePeriod(t *testing.T) {
	tests := []struct {
		cmdline string
		want    time.Duration
		wantErr bool
	}{
		{cmdline: "bin/fedop-manager --metrics-bind-address=127.0.0.1:1 --metrics-secure=false", want: time.Second},
		{cmdline: "bin/fedop-manager --member-probe-period=2s", want: 2 * time.Second},
		{cmdline: "bin/fedop-manager -member-probe-period 500ms --leader-elect=false", want: 500 * time.Millisecond},
		{cmdline: "bin/fedop-manager --member-probe-periodic=9s", want: time.Second},
		{cmdline: "bin/fedop-manager --member-probe-period", wantErr: true},
		{cmdline: "bin/fedop-manager --member-probe-period=soon", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.cmdline, func(t *testing.T) {
			got, err := probePeriod(tc.cmdline, defaultProbePeriod)
			if tc.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	assert.True(t, probeRateOK(2, time.Second))
	assert.True(t, probeRateOK(1.9, time.Second))
	assert.False(t, probeRateOK(1.7, time.Second))
	assert.False(t, probeRateOK(4, time.Second))
	assert.True(t, probeRateOK(1, 2*time.Second))
}

// TestItems78Report checks the rows and sections of items 7 and 8: met
// targets say yes, missed ones NO, and item 8 cites item 3's reads per
// step only when item 3 was measured.
func TestItems78Report(t *testing.T) {
	o := options{members: []string{"k8s-a", "k8s-b"}, items: map[int]bool{5: true, 7: true, 8: true}, memberRounds: 2, idleWindow: 20 * time.Second}
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	discovery := func(latency time.Duration, n int) discoveryResult {
		d := discoveryResult{members: o.members, pods: 8, reused: 1,
			writes:     map[string]map[string]float64{"k8s-a": {"APPLY": 3 * float64(n+1)}, "k8s-b": {"APPLY": 3 * float64(n+1)}},
			idleWrites: map[string]map[string]float64{"k8s-a": {}, "k8s-b": {}}, idleWindow: 10 * time.Second}
		for i := range n {
			d.replacements = append(d.replacements, replacement{member: o.members[i%2], pod: "disc-pd-0", oldIP: "10.241.0.1", newIP: "10.241.0.2",
				ipSeen: t0, listed: map[string]time.Time{"k8s-a": t0.Add(latency / 2), "k8s-b": t0.Add(latency)}})
		}
		return d
	}
	idle := func(n int, cpu, probes float64) *idleRun {
		i := &idleRun{members: n, window: 20 * time.Second, cpu: cpu, managerProbes: probes}
		for range n {
			i.probes = append(i.probes, probes)
			i.others = append(i.others, 0.3)
		}
		return i
	}
	members := membersResult{
		runs: []connectRun{
			{members: 10, connected: []time.Duration{time.Second}, all: time.Second, idle: idle(10, 0.01, 2)},
			{members: 10, connected: []time.Duration{time.Second}, all: time.Second, idle: idle(10, 0.01, 2)},
			{members: 50, connected: []time.Duration{time.Second}, all: time.Second, idle: idle(50, 0.05, 2)},
			{members: 50, connected: []time.Duration{time.Second}, all: time.Second, idle: idle(50, 0.05, 2)},
		},
		baseline: idleRun{members: 50, probes: make([]float64, 50), others: []float64{0.2}},
	}
	find := func(rows []row, item, part string) row { return findRow(t, rows, item, part) }

	good := &results{discovery: discovery(80*time.Millisecond, 24), members: members,
		managerCmdline: "bin/fedop-manager --metrics-secure=false", managerProbePeriod: time.Second}
	rows := good.rows(o)
	lat := find(rows, "7", "pod IP change")
	assert.Equal(t, "yes", lat.met)
	assert.Equal(t, "80ms / 80ms / 80ms", lat.figure)
	writes := find(rows, "7", "EndpointSlice writes")
	assert.Equal(t, "6.00 (k8s-a 3.00, k8s-b 3.00; APPLY 6.00); 0 in 10s idle before", writes.figure)
	probes := find(rows, "8", "freshness probes")
	assert.Equal(t, "yes", probes.met)
	assert.Contains(t, probes.figure, "2.00 (2.00 to 2.00); other requests 0.30 per s per member, 0.20 with no manager connected")
	cpu := find(rows, "8", "manager CPU")
	assert.Equal(t, "0.010 / 0.050 (+0.0010 per member)", cpu.figure)
	gate := find(rows, "8", "network round trips")
	assert.Equal(t, "-", gate.met, "item 3 was not measured")
	md := good.markdown(o, rows)
	assert.Contains(t, md, "## 7. Discovery")
	assert.Contains(t, md, "## 8. Freshness")
	assert.NotContains(t, md, "## Targets missed")

	bad := &results{discovery: discovery(1500*time.Millisecond, 24), members: members}
	bad.members.runs = []connectRun{{members: 50, connected: []time.Duration{time.Second}, all: time.Second, idle: idle(50, 0.05, 1)}}
	// Item 3 measured: one fedop round with 24 pods and 12 reads beyond
	// the idle rate.
	bad.fedop, bad.sts = &system{name: "fedop", pods: 24}, &system{name: "StatefulSet", pods: 24}
	bad.stepFedop = []windowResult{{window: 10 * time.Second, requests: map[reqKey]float64{{"k8s-a", "GET", "200"}: 12 + 20}}}
	bad.stepSTS = []windowResult{{window: 10 * time.Second, requests: map[reqKey]float64{{"k8s-a", "GET", "200"}: 20}}}
	o.items[1], o.items[3] = true, true
	rows = bad.rows(o)
	assert.Equal(t, "NO", find(rows, "7", "pod IP change").met)
	assert.Equal(t, "NO", find(rows, "8", "freshness probes").met)
	gate = find(rows, "8", "network round trips")
	assert.Equal(t, "NO", gate.met)
	assert.Equal(t, "0.50 (1.33 raw)", gate.figure)
	md = bad.markdown(o, rows)
	assert.Contains(t, md, "## Targets missed")
	assert.Contains(t, md, "Section 7 gives this run's figures")
	assert.Contains(t, md, "`Registry.State`")
	assert.Contains(t, md, "(the lab's 2 members' probes, 2 per 1s each, make 4.000 of it)")
}
