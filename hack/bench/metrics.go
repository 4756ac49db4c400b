package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/util/wait"
)

// sample is one series of a scrape: a metric name, its labels, its value.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// scrape is the manager's metrics at one moment.
type scrape struct {
	at      time.Time
	samples []sample
}

// scrapeMetrics reads url (the manager's /metrics) once.
func scrapeMetrics(ctx context.Context, url string) (scrape, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return scrapeWith(ctx, http.DefaultClient, url)
}

// scrapeWith reads url once with client c.
func scrapeWith(ctx context.Context, c *http.Client, url string) (scrape, error) {
	// The text format: the manager offers protobuf and OpenMetrics too.
	resp, err := getOK(ctx, c, url, "text/plain;version=0.0.4", "scraping")
	if err != nil {
		return scrape{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	samples, err := parseText(resp.Body)
	if err != nil {
		return scrape{}, fmt.Errorf("scraping %s: %w", url, err)
	}
	return scrape{at: time.Now(), samples: samples}, nil
}

// getOK sends c a GET of url, with the Accept header accept unless it is
// empty, and returns the response if its status is 200 OK; the caller
// closes its body. A failed exchange or another status is an error
// beginning "<what> <url>: ".
func getOK(ctx context.Context, c *http.Client, url, accept, what string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, url, err)
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("%s %s: %s", what, url, resp.Status)
	}
	return resp, nil
}

// parseText parses the Prometheus text exposition format with
// Prometheus's own parser (expfmt) and flattens each family into the
// series a query sees: a histogram's _bucket, _sum and _count, a summary's
// quantiles, _sum and _count, a counter or gauge as it is.
func parseText(r io.Reader) ([]sample, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	vec, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{Timestamp: model.Now()}, slices.Collect(maps.Values(fams))...)
	if err != nil {
		return nil, err
	}
	out := make([]sample, 0, len(vec))
	for _, x := range vec {
		s := sample{name: string(x.Metric[model.MetricNameLabel]), labels: make(map[string]string, len(x.Metric)), value: float64(x.Value)}
		for k, v := range x.Metric {
			if k != model.MetricNameLabel {
				s.labels[string(k)] = string(v)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// sum returns the sum of the samples named name whose labels include every
// pair of match, and whether any matched.
func (s scrape) sum(name string, match map[string]string) (float64, bool) {
	total, found := 0.0, false
	for _, x := range s.samples {
		if x.name != name {
			continue
		}
		ok := true
		for k, v := range match {
			if x.labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			total += x.value
			found = true
		}
	}
	return total, found
}

// connected reports whether the manager's metrics in s show member
// connected: fedop_member_connected at 1.
func (s scrape) connected(member string) bool {
	v, ok := s.sum("fedop_member_connected", map[string]string{labelMember: member})
	return ok && v == 1
}

// histogramMean returns the mean of histogram name's observations between
// two scrapes, and their count, over the series matching match.
func histogramMean(before, after scrape, name string, match map[string]string) (time.Duration, float64) {
	s0, _ := before.sum(name+"_sum", match)
	c0, _ := before.sum(name+"_count", match)
	s1, _ := after.sum(name+"_sum", match)
	c1, _ := after.sum(name+"_count", match)
	if c1 <= c0 {
		return 0, 0
	}
	return time.Duration((s1 - s0) / (c1 - c0) * float64(time.Second)), c1 - c0
}

// reqKey is one series of client-go's rest_client_requests_total, with the
// API server's address replaced by the cluster's name.
type reqKey struct {
	cluster, method, code string
}

// requests returns rest_client_requests_total by cluster, method and code.
// hosts maps an API server's host:port to its cluster's name; a host not
// in it is kept as it is.
func (s scrape) requests(hosts map[string]string) map[reqKey]float64 {
	out := map[reqKey]float64{}
	for _, x := range s.samples {
		if x.name != "rest_client_requests_total" {
			continue
		}
		cluster := hosts[x.labels[hostCluster]]
		if cluster == "" {
			cluster = x.labels[hostCluster]
		}
		out[reqKey{cluster, x.labels["method"], x.labels["code"]}] += x.value
	}
	return out
}

// requestDelta returns after minus before, by series, dropping zeros.
func requestDelta(before, after scrape, hosts map[string]string) map[reqKey]float64 {
	b, a := before.requests(hosts), after.requests(hosts)
	out := map[reqKey]float64{}
	for k, v := range a {
		if d := v - b[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// isWrite reports whether an HTTP method changes state on the server.
func isWrite(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// waitMetrics scrapes url every 200ms until cond holds for a scrape, or
// ctx ends.
func waitMetrics(ctx context.Context, url string, what string, cond func(scrape) bool) error {
	var lastErr error
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		s, err := scrapeMetrics(ctx, url)
		if err != nil {
			lastErr = err
			return false, nil
		}
		return cond(s), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w (last error: %v)", what, err, lastErr)
	}
	return nil
}
