package main

import (
	"context"
	"fmt"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// window is the time range every query covers, and the step of its range
// queries.
type window struct {
	Start, End time.Time
	Step       time.Duration
}

// point is one sample of a series: T in Unix seconds.
type point struct{ T, V float64 }

// series is one series of a target's result, named by the target's
// legendFormat.
type series struct {
	Name   string
	Labels model.Metric
	Points []point
}

// panelData is a panel with its targets' series, in the order of the
// targets and, within one, of Prometheus's result. A row has none.
type panelData struct {
	panel
	Series []series
}

// rangeQuerier is the part of Prometheus's API (v1.API) that the renderer
// uses, so that a test can stand in for it.
type rangeQuerier interface {
	QueryRange(ctx context.Context, query string, r v1.Range, opts ...v1.Option) (model.Value, v1.Warnings, error)
}

// queryTimeout bounds one range query.
const queryTimeout = 30 * time.Second

// queryPanels runs every target of every panel shown (the top-level
// panels; those of collapsed rows are not shown) as a range query over w,
// after substituting vars. A query that fails, or that does not return a
// matrix, is an error; Prometheus's warnings go to warn.
func queryPanels(ctx context.Context, q rangeQuerier, d dashboard, vars map[string]varValue, w window, warn func(string)) ([]panelData, error) {
	out := make([]panelData, 0, len(d.Panels))
	for _, p := range d.Panels {
		pd := panelData{panel: p}
		for _, t := range p.Targets {
			if t.Hide || t.Expr == "" {
				continue
			}
			expr, err := substitute(t.Expr, vars)
			if err != nil {
				return nil, fmt.Errorf("panel %q, target %s: %w", p.Title, t.RefID, err)
			}
			ss, err := queryRange(ctx, q, expr, w, warn)
			if err != nil {
				return nil, fmt.Errorf("panel %q, target %s: %w", p.Title, t.RefID, err)
			}
			for i := range ss {
				ss[i].Name = legendName(t.LegendFormat, ss[i].Labels, expr)
			}
			pd.Series = append(pd.Series, ss...)
		}
		out = append(out, pd)
	}
	return out, nil
}

// queryRange runs one range query and returns its series, unnamed.
func queryRange(ctx context.Context, q rangeQuerier, expr string, w window, warn func(string)) ([]series, error) {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	val, warnings, err := q.QueryRange(ctx, expr, v1.Range{Start: w.Start, End: w.End, Step: w.Step})
	for _, s := range warnings {
		warn(fmt.Sprintf("%s: %s", expr, s))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", expr, err)
	}
	m, ok := val.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("%s: a range query returned a %s, not a matrix", expr, val.Type())
	}
	out := make([]series, 0, len(m))
	for _, s := range m {
		pts := make([]point, 0, len(s.Values))
		for _, v := range s.Values {
			pts = append(pts, point{T: float64(v.Timestamp) / 1e3, V: float64(v.Value)})
		}
		out = append(out, series{Labels: s.Metric, Points: pts})
	}
	return out, nil
}
