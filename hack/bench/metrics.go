package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// sample is one line of the Prometheus text exposition format.
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
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return scrape{}, err
	}
	// The text format: the manager offers protobuf and OpenMetrics too.
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := c.Do(req)
	if err != nil {
		return scrape{}, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return scrape{}, fmt.Errorf("scraping %s: %s", url, resp.Status)
	}
	samples, err := parseText(resp.Body)
	if err != nil {
		return scrape{}, fmt.Errorf("scraping %s: %w", url, err)
	}
	return scrape{at: time.Now(), samples: samples}, nil
}

// parseText parses the Prometheus text exposition format: comment lines
// are skipped; every other line is name{label="value",...} value
// [timestamp].
func parseText(r io.Reader) ([]sample, error) {
	var out []sample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		s, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %q: %w", line, err)
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

func parseLine(line string) (sample, error) {
	s := sample{labels: map[string]string{}}
	end := strings.IndexAny(line, "{ ")
	if end <= 0 {
		return s, fmt.Errorf("no metric name")
	}
	s.name, line = line[:end], line[end:]
	if line[0] == '{' {
		line = line[1:]
		for {
			line = strings.TrimLeft(line, " ,")
			if line == "" {
				return s, fmt.Errorf("unterminated labels")
			}
			if line[0] == '}' {
				line = line[1:]
				break
			}
			eq := strings.Index(line, `="`)
			if eq <= 0 {
				return s, fmt.Errorf("bad label")
			}
			key := line[:eq]
			line = line[eq+2:]
			var val strings.Builder
			closed := false
			for i := 0; i < len(line); i++ {
				c := line[i]
				if c == '\\' && i+1 < len(line) {
					i++
					switch line[i] {
					case 'n':
						val.WriteByte('\n')
					default:
						val.WriteByte(line[i])
					}
					continue
				}
				if c == '"' {
					line, closed = line[i+1:], true
					break
				}
				val.WriteByte(c)
			}
			if !closed {
				return s, fmt.Errorf("unterminated label value")
			}
			s.labels[key] = val.String()
		}
	}
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return s, fmt.Errorf("no value")
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, fmt.Errorf("value: %w", err)
	}
	s.value = v
	return s, nil
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

// waitMetrics polls url until cond holds for a scrape, or ctx ends.
func waitMetrics(ctx context.Context, url string, what string, cond func(scrape) bool) error {
	var lastErr error
	for {
		s, err := scrapeMetrics(ctx, url)
		if err == nil && cond(s) {
			return nil
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %v)", what, ctx.Err(), lastErr)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
