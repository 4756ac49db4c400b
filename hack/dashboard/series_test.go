package main

import (
	"math"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
)

func TestSegments(t *testing.T) {
	pts := []point{{0, 1}, {2, 2}, {4, math.NaN()}, {6, 3}, {8, 4}, {20, 5}, {22, math.Inf(1)}}
	assert.Equal(t, [][]point{{{0, 1}, {2, 2}}, {{6, 3}, {8, 4}}, {{20, 5}}}, segments(pts, 2),
		"broken at NaN, at a gap of more than 1.5 steps and at +Inf")
	assert.Nil(t, segments(nil, 2))
}

func TestLastValue(t *testing.T) {
	v, ok := lastValue([]point{{0, 1}, {2, 2}, {4, math.NaN()}})
	assert.True(t, ok)
	assert.Equal(t, 2.0, v, "the last value that is not NaN")
	_, ok = lastValue([]point{{0, math.NaN()}})
	assert.False(t, ok)
}

func TestValueRange(t *testing.T) {
	lo, hi, ok := valueRange([]series{{Points: []point{{0, 3}, {1, math.NaN()}}}, {Points: []point{{0, -1}}}})
	assert.True(t, ok)
	assert.Equal(t, []float64{-1, 3}, []float64{lo, hi})
	_, _, ok = valueRange([]series{{Points: []point{{0, math.NaN()}}}, {}})
	assert.False(t, ok, "no finite value: no data")
}

func TestBands(t *testing.T) {
	pts := []point{{0, 1}, {2, 1}, {4, 0}, {6, 0}, {8, 1}, {20, 1}, {22, math.NaN()}}
	assert.Equal(t, []band{{0, 4, 1}, {4, 8, 0}, {8, 10, 1}, {20, 22, 1}}, bands(pts, 2, true),
		"merged runs; a sample before a gap lasts one step")
	assert.Equal(t, []band{{0, 2, 1}, {2, 4, 1}}, bands(pts[:2], 2, false)[:2], "unmerged: one band per sample")
}

func TestHistogramBuckets(t *testing.T) {
	ss := []series{
		{Labels: model.Metric{"le": "+Inf"}, Points: []point{{0, 10}, {2, 12}}},
		{Labels: model.Metric{"le": "0.1"}, Points: []point{{0, 4}, {2, 4}}},
		{Labels: model.Metric{"le": "0.5"}, Points: []point{{0, 9}, {2, 12}}},
		{Labels: model.Metric{}, Points: []point{{0, 1}}},
	}
	got := histogramBuckets(ss)
	assert.Equal(t, []bucket{
		{UpperBound: 0.1, Counts: []point{{0, 4}, {2, 4}}},
		{UpperBound: 0.5, Counts: []point{{0, 5}, {2, 8}}},
		{UpperBound: math.Inf(1), Counts: []point{{0, 1}, {2, 0}}},
	}, got, "sorted by le, each less the bucket below; no le: left out")
}

func TestThresholdColor(t *testing.T) {
	one := 1.0
	steps := []thresholdStep{{Color: "red"}, {Color: "green", Value: &one}}
	assert.Equal(t, namedColors["red"], thresholdColor(steps, 0))
	assert.Equal(t, namedColors["green"], thresholdColor(steps, 1))
	assert.Equal(t, namedColors["green"], thresholdColor(steps, 7))
	assert.Nil(t, thresholdColor([]thresholdStep{{Color: "transparent"}}, 0), "transparent is no color")
	assert.Nil(t, thresholdColor(nil, 0))
	assert.Equal(t, parseColor("#ff8000"), thresholdColor([]thresholdStep{{Color: "#ff8000"}}, 0))
}

func TestSchemeColor(t *testing.T) {
	assert.Equal(t, schemeOranges[0], schemeColor(schemeOranges, -1))
	assert.Equal(t, schemeOranges[len(schemeOranges)-1], schemeColor(schemeOranges, 1))
	assert.Equal(t, schemeOranges[4], schemeColor(schemeOranges, 0.5))
}
