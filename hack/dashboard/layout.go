package main

import (
	"math"
	"time"

	"gonum.org/v1/plot"
)

// Grafana's grid (public/app/core/constants.ts): 24 columns; rows of
// GRID_CELL_HEIGHT with GRID_CELL_VMARGIN between rows and between
// columns. The renderer keeps those sizes, in pixels of a page of any
// width.
const (
	gridColumns   = 24
	gridRowHeight = 30.0
	gridMargin    = 8.0
)

// Caption band: a title line, then the caption's lines.
const (
	captionTitleHeight = 30.0
	captionLineHeight  = 18.0
)

// rect is a rectangle on the page in pixels, Y from the top.
type rect struct{ X, Y, W, H float64 }

// grid places panels on a page Width pixels wide, the grid's first row
// Top pixels below the top of the page.
type grid struct {
	Width, Top float64
}

// columnWidth is the width of one of the 24 columns: the page's width
// less a margin left of every column and right of the last.
func (g grid) columnWidth() float64 {
	return (g.Width - (gridColumns+1)*gridMargin) / gridColumns
}

// rect is where a panel at p is drawn. A gridPos that reaches past the
// 24th column is cut at it, and a width or height below one cell is one
// cell, as Grafana's grid does when it loads such a dashboard.
func (g grid) rect(p gridPos) rect {
	p.X = min(max(p.X, 0), gridColumns-1)
	p.W = min(max(p.W, 1), gridColumns-p.X)
	p.Y = max(p.Y, 0)
	p.H = max(p.H, 1)
	cw := g.columnWidth()
	return rect{
		X: gridMargin + float64(p.X)*(cw+gridMargin),
		Y: g.Top + gridMargin + float64(p.Y)*(gridRowHeight+gridMargin),
		W: float64(p.W)*cw + float64(p.W-1)*gridMargin,
		H: float64(p.H)*gridRowHeight + float64(p.H-1)*gridMargin,
	}
}

// height is the height of a page that holds panels: the grid's top, its
// rows down to the lowest panel's bottom, and a margin below.
func (g grid) height(panels []panelData) float64 {
	rows := 0
	for _, p := range panels {
		rows = max(rows, max(p.GridPos.Y, 0)+max(p.GridPos.H, 1))
	}
	return g.Top + gridMargin + float64(rows)*(gridRowHeight+gridMargin)
}

// captionHeight is the height of the band above the grid that holds the
// dashboard's title and lines of caption.
func captionHeight(lines int) float64 {
	return gridMargin + captionTitleHeight + float64(lines)*captionLineHeight
}

// flowLines breaks items of the given widths into lines no wider than
// maxWidth, gap pixels between two items on a line, and returns the
// indexes of each line's items. An item wider than maxWidth gets a line
// of its own.
func flowLines(widths []float64, gap, maxWidth float64) [][]int {
	var lines [][]int
	flush := func(from, to int) {
		line := make([]int, 0, to-from)
		for i := from; i < to; i++ {
			line = append(line, i)
		}
		lines = append(lines, line)
	}
	start, used := 0, 0.0
	for i, w := range widths {
		if i > start && used+gap+w > maxWidth {
			flush(start, i)
			start, used = i, 0
		}
		if i > start {
			used += gap
		}
		used += w
	}
	if start < len(widths) {
		flush(start, len(widths))
	}
	return lines
}

// timeSteps are the tick intervals of a time axis, as a clock reads them.
var timeSteps = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

// timeTicks marks a time axis in Unix seconds, in UTC: the smallest
// interval of timeSteps that gives at most Max ticks, at its multiples,
// labelled 15:04:05 (15:04 from a minute up).
type timeTicks struct{ Max int }

// Ticks implements plot.Ticker.
func (t timeTicks) Ticks(lo, hi float64) []plot.Tick {
	if hi <= lo || t.Max < 1 {
		return nil
	}
	step := timeSteps[len(timeSteps)-1]
	for _, s := range timeSteps {
		if (hi-lo)/s.Seconds() <= float64(t.Max) {
			step = s
			break
		}
	}
	format := "15:04:05"
	if step >= time.Minute {
		format = "15:04"
	}
	var ticks []plot.Tick
	for x := math.Ceil(lo/step.Seconds()) * step.Seconds(); x <= hi; x += step.Seconds() {
		sec, frac := math.Modf(x)
		ticks = append(ticks, plot.Tick{Value: x, Label: time.Unix(int64(sec), int64(frac*1e9)).UTC().Format(format)})
	}
	return ticks
}

// unitTicks marks a value axis where gonum's default ticker does, labelled
// in the panel's unit.
type unitTicks struct {
	Unit     string
	Decimals *int
}

// Ticks implements plot.Ticker.
func (u unitTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = formatValue(u.Unit, u.Decimals, ticks[i].Value)
		}
	}
	return ticks
}
