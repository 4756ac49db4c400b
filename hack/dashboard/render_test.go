package main

import (
	"bytes"
	"context"
	"image/color"
	"image/png"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakePrometheus answers range queries with synthetic series shaped like
// what fedop-manager's metrics give each of the dashboard's queries, and
// records the queries it got.
type fakePrometheus struct {
	queries []string
}

// QueryRange implements rangeQuerier.
func (f *fakePrometheus) QueryRange(_ context.Context, q string, r v1.Range, _ ...v1.Option) (model.Value, v1.Warnings, error) {
	f.queries = append(f.queries, q)
	var m model.Matrix
	add := func(labels model.Metric, v func(x float64) float64) {
		s := &model.SampleStream{Metric: labels}
		n := int(r.End.Sub(r.Start) / r.Step)
		for i := 0; i <= n; i++ {
			x := float64(i) / float64(n)
			s.Values = append(s.Values, model.SamplePair{
				Timestamp: model.TimeFromUnixNano(r.Start.Add(time.Duration(i) * r.Step).UnixNano()),
				Value:     model.SampleValue(v(x)),
			})
		}
		m = append(m, s)
	}
	step := func(at, lo, hi float64) func(float64) float64 {
		return func(x float64) float64 {
			if x < at {
				return lo
			}
			return hi
		}
	}
	switch {
	case strings.Contains(q, "increase(fedop_rollout_step_overhead_seconds_bucket"):
		for i, le := range []string{"0.005", "0.01", "0.025", "0.05", "0.1", "+Inf"} {
			add(model.Metric{"le": model.LabelValue(le)}, func(x float64) float64 {
				return math.Max(0, float64(i+1)*math.Sin(x*math.Pi)) // cumulative: grows with le
			})
		}
	case strings.HasPrefix(q, "histogram_quantile"):
		add(model.Metric{}, func(x float64) float64 {
			if x < 0.3 {
				return math.NaN() // no observations yet
			}
			return 0.01 + 0.02*x
		})
	case strings.Contains(q, "by (member)"):
		add(model.Metric{"member": "k8s-a"}, step(0, 1, 1))
		add(model.Metric{"member": "k8s-b"}, step(0.2, 0, 1))
	case strings.Contains(q, "fedop_member_connected"):
		add(model.Metric{}, step(0.2, 1, 2))
	case strings.Contains(q, "fedop_rollout_steps_total"):
		add(model.Metric{"namespace": "default", "name": "demo", "operation": "Upgrade"}, func(x float64) float64 { return 6 * math.Sin(x*math.Pi) })
	case strings.Contains(q, "fedop_federationcluster_pods"):
		add(model.Metric{"namespace": "default", "name": "demo"}, func(x float64) float64 { return math.Min(1, 0.25+x) })
	case strings.Contains(q, "fedop_federationcluster_condition"):
		add(model.Metric{"namespace": "default", "name": "demo", "type": "Ready"}, step(0.5, 0, 1))
		add(model.Metric{"namespace": "default", "name": "demo", "type": "Progressing"}, step(0.5, 1, 0))
	default:
		add(model.Metric{"controller": "federationcluster", "result": "success", "name": "federationcluster"}, func(x float64) float64 { return 2 + math.Cos(6*x) })
		add(model.Metric{"controller": "fedop-member-cluster", "result": "success", "name": "fedop-member-cluster"}, step(0.1, 1, 0))
	}
	return m, nil, nil
}

// TestRender renders the project's dashboard from synthetic series and
// checks the PNG: it decodes, it has the size of the layout, and panels
// and the gaps between them are where the grid puts them. Set
// DASHBOARD_TEST_PNG to a path to look at the image.
func TestRender(t *testing.T) {
	d, err := loadDashboard("../../config/grafana/dashboard.json")
	require.NoError(t, err)
	start := time.Date(2025, 11, 23, 10, 38, 12, 0, time.UTC)
	w := window{Start: start, End: start.Add(150 * time.Second), Step: 2 * time.Second}
	prom := &fakePrometheus{}
	vars := mergeVars(builtinVars(w, defaultRateInterval), dashboardVars(d, nil))
	panels, err := queryPanels(context.Background(), prom, d, vars, w, func(s string) { t.Error(s) })
	require.NoError(t, err)
	require.Len(t, panels, len(d.Panels))
	targets := 0
	for _, p := range d.Panels {
		targets += len(p.Targets)
	}
	assert.Len(t, prom.queries, targets, "every target of the dashboard, once")
	for _, q := range prom.queries {
		assert.NotContains(t, q, "$", "variables substituted")
	}
	for _, p := range panels {
		if p.Type != "row" {
			assert.NotEmpty(t, p.Series, p.Title)
		}
	}
	assert.Equal(t, "default/demo Upgrade", panels[4].Series[0].Name, "the legendFormat names the series")

	pg := page{Title: "fedop  ·  test", Caption: caption(w, defaultRateInterval, "synthetic series"), Window: w, Panels: panels}
	for _, scale := range []int{1, 2} {
		var buf bytes.Buffer
		require.NoError(t, render(&buf, pg, 1600, scale))
		if scale == 1 && os.Getenv("DASHBOARD_TEST_PNG") != "" {
			require.NoError(t, os.WriteFile(os.Getenv("DASHBOARD_TEST_PNG"), buf.Bytes(), 0o644))
		}
		img, err := png.Decode(&buf)
		require.NoError(t, err)
		g := grid{Width: 1600, Top: captionHeight(2)}
		height := g.height(panels)
		assert.Equal(t, 1600*scale, img.Bounds().Dx(), "width")
		assert.Equal(t, int(math.Round(height))*scale, img.Bounds().Dy(), "height")

		rgba := func(x, y float64) color.RGBA {
			r, g, b, a := img.At(int(x)*scale, int(y)*scale).RGBA()
			return color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), uint8(a >> 8)}
		}
		for _, p := range panels {
			if p.Type == "row" {
				continue
			}
			r := g.rect(p.GridPos)
			assert.Equal(t, panelColor, rgba(r.X+4, r.Y+4), "%s: inside the panel, above its title", p.Title)
			assert.Equal(t, pageColor, rgba(r.X-4, r.Y+r.H/2), "%s: the margin left of it", p.Title)
			assert.Equal(t, pageColor, rgba(r.X+r.W/2, r.Y+r.H+4), "%s: the margin below it", p.Title)
		}
	}
}

// TestRenderNoData: panels whose queries return nothing still render.
func TestRenderNoData(t *testing.T) {
	start := time.Date(2025, 11, 23, 10, 0, 0, 0, time.UTC)
	w := window{Start: start, End: start.Add(time.Minute), Step: time.Second}
	pg := page{Title: "empty", Window: w, Panels: []panelData{
		{panel: panel{Type: "timeseries", Title: "nothing", GridPos: gridPos{W: 12, H: 8}}},
		{panel: panel{Type: "stat", Title: "NaN only", GridPos: gridPos{X: 12, W: 12, H: 8}},
			Series: []series{{Name: "x", Points: []point{{T: unix(start), V: math.NaN()}}}}},
	}}
	var buf bytes.Buffer
	require.NoError(t, render(&buf, pg, 800, 1))
	img, err := png.Decode(&buf)
	require.NoError(t, err)
	assert.Equal(t, 800, img.Bounds().Dx())
	assert.Equal(t, int(grid{Width: 800, Top: captionHeight(0)}.height(pg.Panels)), img.Bounds().Dy())
}
