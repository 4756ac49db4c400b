package main

import (
	"image/color"
	"math"
	"sort"
	"strconv"

	"github.com/prometheus/common/model"
)

// gapFactor: two samples further apart than gapFactor steps have a gap
// between them (Prometheus returned nothing for the steps in between), and
// a line is not drawn across it, as Grafana does not by default.
const gapFactor = 1.5

// finite reports whether v is neither NaN nor infinite.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// segments splits points into runs to be drawn as one line each: a run
// ends at a gap wider than gapFactor steps and at a value that is not
// finite (histogram_quantile of no observations is NaN).
func segments(pts []point, step float64) [][]point {
	var out [][]point
	var cur []point
	for _, p := range pts {
		if !finite(p.V) {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		if len(cur) > 0 && p.T-cur[len(cur)-1].T > gapFactor*step {
			out = append(out, cur)
			cur = nil
		}
		cur = append(cur, p)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// lastValue is the last finite value of pts (Grafana's lastNotNull).
func lastValue(pts []point) (float64, bool) {
	for i := len(pts) - 1; i >= 0; i-- {
		if finite(pts[i].V) {
			return pts[i].V, true
		}
	}
	return 0, false
}

// valueRange is the smallest and largest finite value of the series.
func valueRange(ss []series) (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for _, p := range s.Points {
			if finite(p.V) {
				lo, hi = min(lo, p.V), max(hi, p.V)
			}
		}
	}
	return lo, hi, lo <= hi
}

// band is a stretch of time [From, To) in which a series has one value.
type band struct {
	From, To, V float64
}

// bands is a state timeline's row: each sample holds its value until the
// next, or for one step before a gap or at the end; with merge, adjacent
// stretches of the same value are one (the panel's mergeValues).
func bands(pts []point, step float64, merge bool) []band {
	var out []band
	for i, p := range pts {
		if !finite(p.V) {
			continue
		}
		to := p.T + step
		if i+1 < len(pts) && pts[i+1].T-p.T <= gapFactor*step {
			to = pts[i+1].T
		}
		if n := len(out); merge && n > 0 && out[n-1].V == p.V && out[n-1].To == p.T {
			out[n-1].To = to
			continue
		}
		out = append(out, band{From: p.T, To: to, V: p.V})
	}
	return out
}

// bucket is one bucket of a histogram over time: its upper bound and, at
// each time, the count in it alone.
type bucket struct {
	UpperBound float64
	Counts     []point
}

// histogramBuckets turns the series of a cumulative histogram (one per le
// label) into per-bucket counts over time, lowest bound first: what
// Grafana does with a target of format "heatmap". Series without a valid
// le are left out. At each time a bucket's count is its cumulative value
// less the one of the bucket below, and never below zero.
func histogramBuckets(ss []series) []bucket {
	var bs []bucket
	for _, s := range ss {
		le, err := strconv.ParseFloat(string(s.Labels[model.BucketLabel]), 64)
		if err != nil {
			continue
		}
		bs = append(bs, bucket{UpperBound: le, Counts: s.Points})
	}
	sort.SliceStable(bs, func(i, j int) bool { return bs[i].UpperBound < bs[j].UpperBound })
	below := map[float64]float64{}
	out := make([]bucket, len(bs))
	for i, b := range bs {
		counts := make([]point, len(b.Counts))
		for k, p := range b.Counts {
			counts[k] = point{T: p.T, V: max(p.V-below[p.T], 0)}
			below[p.T] = p.V
		}
		out[i] = bucket{UpperBound: b.UpperBound, Counts: counts}
	}
	return out
}

// Colors of the light theme this renderer draws in.
var (
	pageColor      = color.RGBA{0xf4, 0xf5, 0xf5, 0xff}
	panelColor     = color.RGBA{0xff, 0xff, 0xff, 0xff}
	borderColor    = color.RGBA{0xd8, 0xd9, 0xda, 0xff}
	textColor      = color.RGBA{0x24, 0x29, 0x2e, 0xff}
	secondaryColor = color.RGBA{0x6e, 0x77, 0x81, 0xff}
	gridLineColor  = color.RGBA{0xe4, 0xe6, 0xe8, 0xff}
	unfilledColor  = color.RGBA{0xee, 0xef, 0xf1, 0xff}
)

// classicPalette is Grafana's classic palette, the colors of a panel's
// series in order.
var classicPalette = []color.RGBA{
	{0x7e, 0xb2, 0x6d, 0xff}, {0xea, 0xb8, 0x39, 0xff}, {0x6e, 0xd0, 0xe0, 0xff}, {0xef, 0x84, 0x3c, 0xff},
	{0xe2, 0x4d, 0x42, 0xff}, {0x1f, 0x78, 0xc1, 0xff}, {0xba, 0x43, 0xa9, 0xff}, {0x70, 0x5d, 0xa0, 0xff},
	{0x50, 0x86, 0x42, 0xff}, {0xcc, 0xa3, 0x00, 0xff}, {0x44, 0x7e, 0xbc, 0xff}, {0xc1, 0x5c, 0x17, 0xff},
}

// namedColors are Grafana's named colors, in their light-theme shades.
var namedColors = map[string]color.RGBA{
	"green":  {0x56, 0xa6, 0x4b, 0xff},
	"red":    {0xe0, 0x2f, 0x44, 0xff},
	"blue":   {0x32, 0x74, 0xd9, 0xff},
	"orange": {0xff, 0x78, 0x0a, 0xff},
	"yellow": {0xf2, 0xcc, 0x0c, 0xff},
	"purple": {0xa3, 0x52, 0xcc, 0xff},
	"text":   textColor,
}

// parseColor reads a color as a dashboard writes it: a named color, "text",
// #rrggbb, or "transparent" (nil). An unknown name is the text color.
func parseColor(s string) color.Color {
	if s == "transparent" {
		return nil
	}
	if c, ok := namedColors[s]; ok {
		return c
	}
	if len(s) == 7 && s[0] == '#' {
		if v, err := strconv.ParseUint(s[1:], 16, 32); err == nil {
			return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 0xff}
		}
	}
	return textColor
}

// thresholdColor is the color of v under absolute thresholds: that of the
// last step whose value is at most v (the first step, value null, is the
// base). Without steps, or when that color is transparent, it is nil.
func thresholdColor(steps []thresholdStep, v float64) color.Color {
	var c color.Color
	for _, s := range steps {
		if s.Value == nil || v >= *s.Value {
			c = parseColor(s.Color)
		}
	}
	return c
}

// schemeOranges is d3's interpolateOranges, which Grafana's heatmap color
// scheme "Oranges" uses, at nine stops from low to high.
var schemeOranges = []color.RGBA{
	{0xff, 0xf5, 0xeb, 0xff}, {0xfe, 0xe6, 0xce, 0xff}, {0xfd, 0xd0, 0xa2, 0xff},
	{0xfd, 0xae, 0x6b, 0xff}, {0xfd, 0x8d, 0x3c, 0xff}, {0xf1, 0x69, 0x13, 0xff},
	{0xd9, 0x48, 0x01, 0xff}, {0xa6, 0x36, 0x03, 0xff}, {0x7f, 0x27, 0x04, 0xff},
}

// schemeColor is the color at f in [0, 1] along stops, linearly between
// the two nearest.
func schemeColor(stops []color.RGBA, f float64) color.RGBA {
	f = min(max(f, 0), 1) * float64(len(stops)-1)
	i := min(int(f), len(stops)-2)
	t := f - float64(i)
	a, b := stops[i], stops[i+1]
	mix := func(x, y uint8) uint8 { return uint8(math.Round(float64(x) + t*(float64(y)-float64(x)))) }
	return color.RGBA{mix(a.R, b.R), mix(a.G, b.G), mix(a.B, b.B), 0xff}
}
