package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestGridRect(t *testing.T) {
	// 1600px: 25 margins of 8px leave 1400px, 24 columns of 58.33px.
	g := grid{Width: 1600, Top: 56}
	assert.InDelta(t, 1400.0/24, g.columnWidth(), 1e-9)
	tests := []struct {
		name string
		pos  gridPos
		want rect
	}{
		{name: "full-width row", pos: gridPos{X: 0, Y: 0, W: 24, H: 1}, want: rect{X: 8, Y: 64, W: 1584, H: 30}},
		{name: "left quarter, 6 rows", pos: gridPos{X: 0, Y: 1, W: 6, H: 6}, want: rect{X: 8, Y: 102, W: 6*1400.0/24 + 40, H: 220}},
		{name: "right half, ends a margin from the edge", pos: gridPos{X: 12, Y: 8, W: 12, H: 8}, want: rect{X: 804, Y: 368, W: 788, H: 296}},
		{name: "past the 24th column: cut", pos: gridPos{X: 20, Y: 0, W: 10, H: 2}, want: rect{X: 8 + 20*(1400.0/24+8), Y: 64, W: 4*1400.0/24 + 24, H: 68}},
		{name: "zero size: one cell", pos: gridPos{X: 0, Y: 0, W: 0, H: 0}, want: rect{X: 8, Y: 64, W: 1400.0 / 24, H: 30}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := g.rect(tt.pos)
			assert.InDelta(t, tt.want.X, got.X, 1e-9, "X")
			assert.InDelta(t, tt.want.Y, got.Y, 1e-9, "Y")
			assert.InDelta(t, tt.want.W, got.W, 1e-9, "W")
			assert.InDelta(t, tt.want.H, got.H, 1e-9, "H")
			assert.LessOrEqual(t, got.X+got.W, g.Width-gridMargin+1e-9, "inside the page")
		})
	}
}

func TestGridHeight(t *testing.T) {
	g := grid{Width: 1600, Top: captionHeight(1)}
	assert.Equal(t, 56.0, g.Top)
	panels := []panelData{
		{panel: panel{GridPos: gridPos{Y: 0, H: 1}}},
		{panel: panel{GridPos: gridPos{Y: 32, H: 8}}},
		{panel: panel{GridPos: gridPos{Y: 24, H: 7}}},
	}
	// 40 rows of 30px with 8px above each, and 8px below the last.
	assert.Equal(t, 56+8+40*38.0, g.height(panels))
	last := g.rect(panels[1].GridPos)
	assert.Equal(t, g.height(panels)-gridMargin, last.Y+last.H, "the lowest panel ends a margin above the bottom")
	assert.Equal(t, 56+8.0, g.height(nil))
}

func TestFlowLines(t *testing.T) {
	tests := []struct {
		name   string
		widths []float64
		want   [][]int
	}{
		{name: "none", widths: nil, want: nil},
		{name: "all on one line", widths: []float64{30, 30, 30}, want: [][]int{{0, 1, 2}}},
		{name: "exactly full", widths: []float64{50, 50}, want: [][]int{{0, 1}}},
		{name: "wraps", widths: []float64{50, 50, 50}, want: [][]int{{0, 1}, {2}}},
		{name: "too wide for any line: a line of its own", widths: []float64{20, 200, 20}, want: [][]int{{0}, {1}, {2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, flowLines(tt.widths, 10, 110))
		})
	}
}

func TestTimeTicks(t *testing.T) {
	start := float64(time.Date(2025, 11, 23, 10, 38, 12, 0, time.UTC).Unix())
	ticks := timeTicks{Max: 8}.Ticks(start, start+150)
	labels := make([]string, len(ticks))
	for i, tk := range ticks {
		labels[i] = tk.Label
	}
	// 150s in at most 8 ticks: every 30s (15s would be 10).
	assert.Equal(t, []string{"10:38:30", "10:39:00", "10:39:30", "10:40:00", "10:40:30"}, labels)

	ticks = timeTicks{Max: 6}.Ticks(start, start+3600)
	assert.Equal(t, "10:40", ticks[0].Label, "from a minute up, no seconds")
	assert.Len(t, ticks, 6, "every 10 minutes")

	assert.Empty(t, timeTicks{Max: 6}.Ticks(start, start), "an empty range has no ticks")
}

func TestUnitTicks(t *testing.T) {
	var labels []string
	for _, tk := range (unitTicks{Unit: "s"}).Ticks(0, 0.3) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	assert.Equal(t, []string{"0 s", "150 ms", "300 ms"}, labels, "gonum's major ticks, in the unit; minor ones unlabelled")
}
