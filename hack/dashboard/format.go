package main

import (
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
)

// legendPattern is a label reference in a legendFormat: {{label}}, spaces
// inside the braces allowed, as Grafana's Prometheus data source reads it.
var legendPattern = regexp.MustCompile(`\{\{\s*(.+?)\s*\}\}`)

// legendName is the name Grafana gives a series of expr's result with
// labels: legendFormat with each {{label}} replaced by the label's value
// (empty when the series does not have it). Without a legendFormat (or
// with "__auto") it is the series' labels as Prometheus writes them,
// name{a="b"}, or, for a series without labels, expr itself.
func legendName(legendFormat string, labels model.Metric, expr string) string {
	if legendFormat == "" || legendFormat == "__auto" {
		if len(labels) == 0 {
			return expr
		}
		return labels.String()
	}
	return legendPattern.ReplaceAllStringFunc(legendFormat, func(ref string) string {
		name := legendPattern.FindStringSubmatch(ref)[1]
		return string(labels[model.LabelName(name)])
	})
}

// formatValue writes v in Grafana's unit (fieldConfig.defaults.unit) with
// decimals digits after the point, or as many as its size needs when
// decimals is nil. Units: none and "" (a number), short (K, Mil, Bil), s
// and ms (scaled to ns, µs, ms, s, min, hour, day), percent, percentunit
// (a fraction shown in %), reqps; any other unit is written after the
// number.
func formatValue(unit string, decimals *int, v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	switch unit {
	case "", "none":
		return formatNumber(v, decimals)
	case "short":
		return formatShort(v, decimals)
	case "s":
		return formatSeconds(v, decimals)
	case "ms":
		return formatSeconds(v/1e3, decimals)
	case "percent":
		return formatNumber(v, decimals) + "%"
	case "percentunit":
		return formatNumber(v*100, decimals) + "%"
	case "reqps":
		return formatNumber(v, decimals) + " req/s"
	}
	return formatNumber(v, decimals) + " " + unit
}

// formatNumber writes v with decimals digits after the point, or, when
// decimals is nil, with two significant digits below 1, then two, one or
// no decimals as v grows past 1, 10 and 100, trailing zeros dropped.
func formatNumber(v float64, decimals *int) string {
	if decimals != nil {
		return strconv.FormatFloat(v, 'f', *decimals, 64)
	}
	a := math.Abs(v)
	var d int
	switch {
	case a == 0:
		return "0"
	case a >= 100:
		d = 0
	case a >= 10:
		d = 1
	case a >= 1:
		d = 2
	default:
		d = min(int(math.Ceil(-math.Log10(a)))+1, 9)
	}
	s := strconv.FormatFloat(v, 'f', d, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// formatShort is Grafana's unit short: thousands as K, millions as Mil,
// billions as Bil.
func formatShort(v float64, decimals *int) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return formatNumber(v/1e9, decimals) + " Bil"
	case a >= 1e6:
		return formatNumber(v/1e6, decimals) + " Mil"
	case a >= 1e3:
		return formatNumber(v/1e3, decimals) + " K"
	}
	return formatNumber(v, decimals)
}

// formatSeconds writes a duration of v seconds in the largest unit in
// which it is at least 1, as Grafana's unit s does.
func formatSeconds(v float64, decimals *int) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return formatNumber(0, decimals) + " s"
	case a < 1e-6:
		return formatNumber(v*1e9, decimals) + " ns"
	case a < 1e-3:
		return formatNumber(v*1e6, decimals) + " µs"
	case a < 1:
		return formatNumber(v*1e3, decimals) + " ms"
	case a < 60:
		return formatNumber(v, decimals) + " s"
	case a < 3600:
		return formatNumber(v/60, decimals) + " min"
	case a < 86400:
		return formatNumber(v/3600, decimals) + " hour"
	}
	return formatNumber(v/86400, decimals) + " day"
}
