package main

import (
	"cmp"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// page is what render draws: the dashboard's title, lines of caption,
// the window the data covers, and the panels with their data.
type page struct {
	Title   string
	Caption []string
	Window  window
	Panels  []panelData
}

// Sizes inside a panel, in pixels.
const (
	panelPadding     = 8.0
	panelTitleHeight = 22.0
	legendLineHeight = 17.0
	legendSwatch     = 14.0
	legendGap        = 16.0
	// tickSpacing is the least room a time axis gives one tick label.
	tickSpacing = 90.0
)

// The typeface: Liberation Sans, which gonum/plot embeds.
var (
	sans     = font.Font{Typeface: "Liberation", Variant: "Sans"}
	sansBold = font.Font{Typeface: "Liberation", Variant: "Sans", Weight: xfont.WeightBold}
)

// textStyle is text in f at size pixels in color c, its top left at the
// point it is drawn at.
func textStyle(f font.Font, size float64, c color.Color) draw.TextStyle {
	return draw.TextStyle{
		Color:   c,
		Font:    font.From(f, vg.Length(size)),
		XAlign:  draw.XLeft,
		YAlign:  draw.YTop,
		Handler: plot.DefaultTextHandler,
	}
}

// render draws pg as a PNG into w: width pixels wide, times scale (2 for
// a sharper image of the same layout), as tall as its panels need.
func render(w io.Writer, pg page, width float64, scale int) error {
	if scale < 1 {
		return fmt.Errorf("scale %d is below 1", scale)
	}
	g := grid{Width: width, Top: captionHeight(len(pg.Caption))}
	if g.columnWidth() < 1 {
		return fmt.Errorf("width %v leaves no room for 24 columns", width)
	}
	height := g.height(pg.Panels)
	img := vgimg.NewWith(
		vgimg.UseWH(vg.Length(width), vg.Length(height)),
		vgimg.UseDPI(72*scale),
		vgimg.UseBackgroundColor(pageColor),
	)
	dc := draw.New(img)
	drawCaption(dc, pg)
	for _, pd := range pg.Panels {
		drawPanel(draw.Canvas{Canvas: dc.Canvas, Rectangle: vgRect(g.rect(pd.GridPos), height)}, pd, pg.Window)
	}
	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

// vgRect turns r (Y from the top) into a rectangle of the canvas (Y from
// the bottom) of a page height pixels tall.
func vgRect(r rect, height float64) vg.Rectangle {
	return vg.Rectangle{
		Min: vg.Point{X: vg.Length(r.X), Y: vg.Length(height - r.Y - r.H)},
		Max: vg.Point{X: vg.Length(r.X + r.W), Y: vg.Length(height - r.Y)},
	}
}

// sub is c drawing into r.
func sub(c draw.Canvas, r vg.Rectangle) draw.Canvas {
	return draw.Canvas{Canvas: c.Canvas, Rectangle: r}
}

// fillRect fills r, clipped to c.
func fillRect(c draw.Canvas, col color.Color, r vg.Rectangle) {
	c.FillPolygon(col, c.ClipPolygonXY([]vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}}))
}

// strokeRect draws r's outline.
func strokeRect(c draw.Canvas, col color.Color, r vg.Rectangle) {
	sty := draw.LineStyle{Color: col, Width: 1}
	c.StrokeLines(sty, []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}, r.Min})
}

// fitText is s, cut and ended with an ellipsis if it is wider than maxWidth
// in sty.
func fitText(sty draw.TextStyle, s string, maxWidth vg.Length) string {
	if sty.Width(s) <= maxWidth {
		return s
	}
	r := []rune(s)
	for len(r) > 0 && sty.Width(string(r)+"…") > maxWidth {
		r = r[:len(r)-1]
	}
	return string(r) + "…"
}

// drawCaption writes the dashboard's title and the caption's lines above
// the grid.
func drawCaption(c draw.Canvas, pg page) {
	x := c.Min.X + gridMargin
	y := c.Max.Y - gridMargin
	maxW := c.Max.X - c.Min.X - 2*gridMargin
	title := textStyle(sansBold, 20, textColor)
	c.FillText(title, vg.Point{X: x, Y: y}, fitText(title, pg.Title, maxW))
	y -= captionTitleHeight
	line := textStyle(sans, 13, secondaryColor)
	for _, l := range pg.Caption {
		c.FillText(line, vg.Point{X: x, Y: y}, fitText(line, l, maxW))
		y -= captionLineHeight
	}
}

// drawPanel draws one panel, or a row's title, into c.
func drawPanel(c draw.Canvas, pd panelData, w window) {
	if pd.Type == "row" {
		title := textStyle(sansBold, 16, textColor)
		title.YAlign = draw.YCenter
		c.FillText(title, vg.Point{X: c.Min.X, Y: (c.Min.Y + c.Max.Y) / 2}, fitText(title, pd.Title, c.Max.X-c.Min.X))
		c.StrokeLine2(draw.LineStyle{Color: borderColor, Width: 1}, c.Min.X, c.Min.Y+1, c.Max.X, c.Min.Y+1)
		return
	}
	fillRect(c, panelColor, c.Rectangle)
	strokeRect(c, borderColor, c.Rectangle)
	body := c.Rectangle
	body.Min.X += panelPadding
	body.Max.X -= panelPadding
	body.Min.Y += panelPadding
	body.Max.Y -= panelPadding
	title := textStyle(sansBold, 14, textColor)
	c.FillText(title, vg.Point{X: body.Min.X, Y: body.Max.Y}, fitText(title, pd.Title, body.Max.X-body.Min.X))
	body.Max.Y -= panelTitleHeight
	bc := sub(c, body)
	if _, _, ok := valueRange(pd.Series); !ok {
		centerText(bc, "No data")
		return
	}
	switch pd.Type {
	case "timeseries", "graph":
		drawTimeSeries(bc, pd, w)
	case "state-timeline":
		drawStateTimeline(bc, pd, w)
	case "heatmap":
		drawHeatmap(bc, pd, w)
	case "stat":
		drawStat(bc, pd)
	case "bargauge", "gauge":
		drawBarGauge(bc, pd)
	default:
		centerText(bc, fmt.Sprintf("panel type %q is not drawn by hack/dashboard", pd.Type))
	}
}

// centerText writes s in the middle of c, in the secondary color.
func centerText(c draw.Canvas, s string) {
	sty := textStyle(sans, 14, secondaryColor)
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
	c.FillText(sty, c.Center(), fitText(sty, s, c.Max.X-c.Min.X))
}

// legendEntry is one entry of a legend: a swatch of Color (an empty
// outline when Color is nil) and a name.
type legendEntry struct {
	Name  string
	Color color.Color
}

// legendLines lays out entries in lines as wide as c.
func legendLines(c draw.Canvas, entries []legendEntry) (draw.TextStyle, [][]int) {
	sty := textStyle(sans, 12, textColor)
	sty.YAlign = draw.YCenter
	maxW := float64(c.Max.X - c.Min.X)
	widths := make([]float64, len(entries))
	for i, e := range entries {
		e.Name = fitText(sty, e.Name, vg.Length(maxW-legendSwatch-4))
		widths[i] = legendSwatch + 4 + float64(sty.Width(e.Name))
	}
	return sty, flowLines(widths, legendGap, maxW)
}

// legendHeight is the height the legend of entries takes in c.
func legendHeight(c draw.Canvas, entries []legendEntry) vg.Length {
	_, lines := legendLines(c, entries)
	return vg.Length(float64(len(lines)) * legendLineHeight)
}

// drawLegend draws entries from the top of c down, Grafana's list
// legend.
func drawLegend(c draw.Canvas, entries []legendEntry) {
	sty, lines := legendLines(c, entries)
	maxW := c.Max.X - c.Min.X
	y := c.Max.Y - legendLineHeight/2
	for _, line := range lines {
		x := c.Min.X
		for _, i := range line {
			e := entries[i]
			sw := vg.Rectangle{Min: vg.Point{X: x, Y: y - 2}, Max: vg.Point{X: x + legendSwatch, Y: y + 2}}
			if e.Color != nil {
				fillRect(c, e.Color, sw)
			} else {
				strokeRect(c, secondaryColor, sw)
			}
			name := fitText(sty, e.Name, maxW-legendSwatch-4)
			c.FillText(sty, vg.Point{X: x + legendSwatch + 4, Y: y}, name)
			x += legendSwatch + 4 + sty.Width(name) + legendGap
		}
		y -= legendLineHeight
	}
}

// newPlot is a plot of time over w in this renderer's style, drawn into
// a canvas widthPx wide.
func newPlot(w window, widthPx vg.Length) *plot.Plot {
	p := plot.New()
	p.BackgroundColor = color.Transparent
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Color = borderColor      // the axis line
		a.Tick.Color = borderColor // the tick marks
		a.Tick.Length = 3
		a.Tick.Label.Font = font.From(sans, 11)
		a.Tick.Label.Color = secondaryColor
		a.Padding = 0
	}
	p.X.Min, p.X.Max = unix(w.Start), unix(w.End)
	p.X.Tick.Marker = timeTicks{Max: max(int(float64(widthPx)/tickSpacing), 2)}
	return p
}

// unix is t in Unix seconds, as the plots' x axes hold time.
func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// gridLines are the plots' grid lines: vertical, and horizontal when h.
func gridLines(h bool) *plotter.Grid {
	g := plotter.NewGrid()
	g.Vertical = draw.LineStyle{Color: gridLineColor, Width: 1}
	g.Horizontal = draw.LineStyle{Color: gridLineColor, Width: 1}
	if !h {
		g.Horizontal.Color = nil
	}
	return g
}

// xys are points as gonum's plotters take them.
func xys(pts []point) plotter.XYs {
	out := make(plotter.XYs, len(pts))
	for i, p := range pts {
		out[i] = plotter.XY{X: p.T, Y: p.V}
	}
	return out
}

// drawTimeSeries draws every series as lines in the palette's colors,
// broken at gaps, a legend below.
func drawTimeSeries(c draw.Canvas, pd panelData, w window) {
	d := pd.FieldConfig.Defaults
	entries := make([]legendEntry, len(pd.Series))
	for i, s := range pd.Series {
		entries[i] = legendEntry{Name: s.Name, Color: classicPalette[i%len(classicPalette)]}
	}
	area := c.Rectangle
	area.Min.Y += legendHeight(c, entries) + 4
	p := newPlot(w, area.Max.X-area.Min.X)
	p.Add(gridLines(true))
	lineWidth := vg.Length(max(d.Custom.LineWidth, 1))
	for i, s := range pd.Series {
		col := classicPalette[i%len(classicPalette)]
		for _, seg := range segments(s.Points, w.Step.Seconds()) {
			if len(seg) == 1 {
				sc, err := plotter.NewScatter(xys(seg))
				if err == nil {
					sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: lineWidth, Shape: draw.CircleGlyph{}}
					p.Add(sc)
				}
				continue
			}
			l, err := plotter.NewLine(xys(seg))
			if err != nil {
				continue
			}
			l.LineStyle = draw.LineStyle{Color: col, Width: lineWidth}
			if d.Custom.FillOpacity > 0 {
				l.FillColor = color.NRGBA{R: col.R, G: col.G, B: col.B, A: uint8(math.Round(255 * min(d.Custom.FillOpacity, 100) / 100))}
			}
			p.Add(l)
		}
	}
	lo, hi, _ := valueRange(pd.Series)
	if d.Min != nil {
		lo = *d.Min
	}
	if d.Max != nil {
		hi = *d.Max
	} else {
		hi += (hi - lo) * 0.05
	}
	if hi <= lo {
		hi = lo + 1
	}
	// The plot's edge cuts a line along it in half, and a series that
	// stays at the minimum (a workqueue at 0) would hardly show.
	lo -= (hi - lo) * 0.015
	p.X.Min, p.X.Max = unix(w.Start), unix(w.End)
	p.Y.Min, p.Y.Max = lo, hi
	p.Y.Tick.Marker = unitTicks{Unit: d.Unit, Decimals: d.Decimals}
	p.Draw(sub(c, area))
	lc := c
	lc.Max.Y = area.Min.Y - 4
	drawLegend(lc, entries)
}

// cell is a colored rectangle in a plot's data coordinates.
type cell struct {
	X0, X1, Y0, Y1 float64
	Color          color.Color
}

// cells is a plotter of rectangles, each shrunk by Gap pixels on every
// side: the bands of a state timeline, the cells of a heatmap.
type cells struct {
	Cells []cell
	Gap   vg.Length
}

// Plot implements plot.Plotter.
func (cs cells) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, k := range cs.Cells {
		r := vg.Rectangle{
			Min: vg.Point{X: trX(k.X0) + cs.Gap, Y: trY(k.Y0) + cs.Gap},
			Max: vg.Point{X: trX(k.X1) - cs.Gap, Y: trY(k.Y1) - cs.Gap},
		}
		if r.Max.X <= r.Min.X {
			r.Max.X = r.Min.X + 1
		}
		fillRect(c, k.Color, r)
	}
}

// drawStateTimeline draws one row per series, each stretch of one value a
// band in the color the panel's thresholds give it (none when
// transparent), and the value mappings' texts as the legend.
func drawStateTimeline(c draw.Canvas, pd panelData, w window) {
	d := pd.FieldConfig.Defaults
	var entries []legendEntry
	for _, m := range d.Mappings {
		if m.Type != "value" {
			continue
		}
		keys := make([]string, 0, len(m.Options))
		for k := range m.Options {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b string) int {
			x, _ := strconv.ParseFloat(a, 64)
			y, _ := strconv.ParseFloat(b, 64)
			return cmp.Compare(x, y)
		})
		for _, k := range keys {
			v, err := strconv.ParseFloat(k, 64)
			if err != nil {
				continue
			}
			entries = append(entries, legendEntry{Name: m.Options[k].Text, Color: thresholdColor(d.Thresholds.Steps, v)})
		}
	}
	area := c.Rectangle
	if len(entries) > 0 {
		area.Min.Y += legendHeight(c, entries) + 4
	}
	rowHeight := pd.Options.RowHeight
	if rowHeight <= 0 || rowHeight > 1 {
		rowHeight = 0.9
	}
	n := len(pd.Series)
	p := newPlot(w, area.Max.X-area.Min.X)
	p.Add(gridLines(false))
	var ks []cell
	ticks := make(plot.ConstantTicks, n)
	for i, s := range pd.Series {
		y := float64(n - 1 - i)
		ticks[i] = plot.Tick{Value: y, Label: s.Name}
		for _, b := range bands(s.Points, w.Step.Seconds(), true) {
			col := thresholdColor(d.Thresholds.Steps, b.V)
			if len(d.Thresholds.Steps) == 0 {
				col = classicPalette[i%len(classicPalette)]
			}
			if col == nil {
				continue
			}
			ks = append(ks, cell{X0: b.From, X1: b.To, Y0: y - rowHeight/2, Y1: y + rowHeight/2, Color: col})
		}
	}
	p.Add(cells{Cells: ks})
	p.X.Min, p.X.Max = unix(w.Start), unix(w.End)
	p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5
	p.Y.Tick.Marker = ticks
	p.Y.Tick.Length = 0
	p.Y.Tick.Label.Color = textColor
	p.Y.Tick.Label.Font = font.From(sans, 12)
	p.Draw(sub(c, area))
	if len(entries) > 0 {
		lc := c
		lc.Max.Y = area.Min.Y - 4
		drawLegend(lc, entries)
	}
}

// drawHeatmap draws a histogram's buckets (one series per le, cumulative)
// as rows of cells, one per step, colored by the count in the bucket alone
// on the scheme Oranges; empty cells are not drawn (Grafana hides values
// of at most 1e-9 by default). The y axis is labelled with the buckets'
// bounds in the panel's y-axis unit, the legend is the color scale.
func drawHeatmap(c draw.Canvas, pd panelData, w window) {
	bs := histogramBuckets(pd.Series)
	if len(bs) == 0 {
		centerText(c, "No series with an le label")
		return
	}
	step := w.Step.Seconds()
	lo, hi := math.Inf(1), 0.0
	for _, b := range bs {
		for _, p := range b.Counts {
			if p.V > 1e-9 {
				lo, hi = min(lo, p.V), max(hi, p.V)
			}
		}
	}
	area := c.Rectangle
	area.Min.Y += legendLineHeight + 4
	p := newPlot(w, area.Max.X-area.Min.X)
	p.Add(gridLines(false))
	var ks []cell
	for i, b := range bs {
		for _, pt := range b.Counts {
			if pt.V <= 1e-9 {
				continue
			}
			ks = append(ks, cell{X0: pt.T - step, X1: pt.T, Y0: float64(i), Y1: float64(i + 1), Color: heatColor(pt.V, lo, hi)})
		}
	}
	p.Add(cells{Cells: ks, Gap: 0.5})
	// One label per boundary, fewer when the rows are too thin for them.
	every := max(1, int(math.Ceil(float64(len(bs)+1)*14/float64(area.Max.Y-area.Min.Y-20))))
	unit := pd.Options.YAxis.Unit
	var ticks plot.ConstantTicks
	for j := 0; j <= len(bs); j++ {
		bound := 0.0
		if j > 0 {
			bound = bs[j-1].UpperBound
		}
		label := ""
		if j%every == 0 || j == len(bs) {
			label = formatValue(unit, nil, bound)
		}
		ticks = append(ticks, plot.Tick{Value: float64(j), Label: label})
	}
	p.X.Min, p.X.Max = unix(w.Start), unix(w.End)
	p.Y.Min, p.Y.Max = 0, float64(len(bs))
	p.Y.Tick.Marker = ticks
	p.Draw(sub(c, area))
	if hi <= 1e-9 {
		centerText(sub(c, area), "No observations in the window")
		return
	}
	// The color scale, from the lowest count drawn to the highest, as
	// Grafana's heatmap legend shows it.
	sty := textStyle(sans, 12, textColor)
	sty.YAlign = draw.YCenter
	y := area.Min.Y - 4 - legendLineHeight/2
	x := c.Min.X
	label := formatNumber(lo, nil)
	c.FillText(sty, vg.Point{X: x, Y: y}, label)
	x += sty.Width(label) + 6
	const scaleWidth, scaleSteps = 120, 24
	for k := range scaleSteps {
		x0 := x + vg.Length(k)*scaleWidth/scaleSteps
		fillRect(c, heatColor(lo+(hi-lo)*float64(k)/(scaleSteps-1), lo, hi),
			vg.Rectangle{Min: vg.Point{X: x0, Y: y - 5}, Max: vg.Point{X: x0 + scaleWidth/scaleSteps + 0.5, Y: y + 5}})
	}
	c.FillText(sty, vg.Point{X: x + scaleWidth + 6, Y: y}, formatNumber(hi, nil))
}

// heatColor is the color of a heatmap cell of count v, the lowest count
// drawn being lo and the highest hi: the scheme from its lightest shade
// that still shows on white (0.15) to its darkest.
func heatColor(v, lo, hi float64) color.RGBA {
	f := 1.0
	if hi > lo {
		f = (v - lo) / (hi - lo)
	}
	return schemeColor(schemeOranges, 0.15+0.85*f)
}

// valueColor is the color of a stat or bar gauge value: the fixed color,
// or the thresholds', or the text color.
func valueColor(d fieldDefaults, v float64) color.Color {
	if d.Color.Mode == "fixed" {
		if c := parseColor(d.Color.FixedColor); c != nil {
			return c
		}
	}
	if c := thresholdColor(d.Thresholds.Steps, v); c != nil {
		return c
	}
	return textColor
}

// drawStat draws each series' last value, one line each, its name on the
// left (textMode value_and_name, the default) and the value large on the
// right.
func drawStat(c draw.Canvas, pd panelData) {
	d := pd.FieldConfig.Defaults
	n := len(pd.Series)
	rowH := (c.Max.Y - c.Min.Y) / vg.Length(n)
	for i, s := range pd.Series {
		top := c.Max.Y - vg.Length(i)*rowH
		mid := top - rowH/2
		value := "N/A"
		col := color.Color(secondaryColor)
		if v, ok := lastValue(s.Points); ok {
			value = formatValue(d.Unit, d.Decimals, v)
			col = valueColor(d, v)
		}
		vs := textStyle(sansBold, float64(min(rowH*0.6, 40)), col)
		vs.YAlign = draw.YCenter
		switch pd.Options.TextMode {
		case "value":
			vs.XAlign = draw.XCenter
			c.FillText(vs, vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: mid}, value)
		default:
			ns := textStyle(sans, 16, textColor)
			ns.YAlign = draw.YCenter
			vs.XAlign = draw.XRight
			c.FillText(vs, vg.Point{X: c.Max.X, Y: mid}, value)
			c.FillText(ns, vg.Point{X: c.Min.X, Y: mid}, fitText(ns, s.Name, c.Max.X-c.Min.X-vs.Width(value)-12))
		}
	}
}

// drawBarGauge draws each series' last value as a horizontal bar between
// the panel's min and max (the largest value when it has none), in the
// thresholds' color, the unfilled rest grey, its name above and the value
// at the right.
func drawBarGauge(c draw.Canvas, pd panelData) {
	d := pd.FieldConfig.Defaults
	n := len(pd.Series)
	lo, hi := 0.0, 0.0
	if d.Min != nil {
		lo = *d.Min
	}
	for _, s := range pd.Series {
		if v, ok := lastValue(s.Points); ok {
			hi = max(hi, v)
		}
	}
	if d.Max != nil {
		hi = *d.Max
	}
	rowH := (c.Max.Y - c.Min.Y) / vg.Length(n)
	name := textStyle(sans, 13, textColor)
	for i, s := range pd.Series {
		top := c.Max.Y - vg.Length(i)*rowH
		c.FillText(name, vg.Point{X: c.Min.X, Y: top}, fitText(name, s.Name, c.Max.X-c.Min.X))
		barH := min(rowH-22, 40)
		if barH < 4 {
			continue
		}
		barTop := top - 20
		v, ok := lastValue(s.Points)
		value, col := "N/A", color.Color(secondaryColor)
		if ok {
			value, col = formatValue(d.Unit, d.Decimals, v), valueColor(d, v)
		}
		vs := textStyle(sansBold, float64(min(barH*0.7, 24)), col)
		vs.XAlign, vs.YAlign = draw.XRight, draw.YCenter
		c.FillText(vs, vg.Point{X: c.Max.X, Y: barTop - barH/2}, value)
		bar := vg.Rectangle{Min: vg.Point{X: c.Min.X, Y: barTop - barH}, Max: vg.Point{X: c.Max.X - vs.Width(value) - 12, Y: barTop}}
		fillRect(c, unfilledColor, bar)
		if ok && hi > lo {
			f := min(max((v-lo)/(hi-lo), 0), 1)
			filled := bar
			filled.Max.X = bar.Min.X + vg.Length(f)*(bar.Max.X-bar.Min.X)
			fillRect(c, col, filled)
		}
	}
}
