package main

import (
	"math"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
)

func TestLegendName(t *testing.T) {
	labels := model.Metric{"namespace": "default", "name": "demo", "operation": "Upgrade"}
	tests := []struct {
		name, format string
		labels       model.Metric
		want         string
	}{
		{name: "labels", format: "{{namespace}}/{{name}} {{operation}}", labels: labels, want: "default/demo Upgrade"},
		{name: "spaces inside the braces", format: "{{ name }}", labels: labels, want: "demo"},
		{name: "a label the series lacks is empty", format: "{{namespace}}/{{name}} {{member}}", labels: labels, want: "default/demo "},
		{name: "plain text", format: "p50", labels: model.Metric{}, want: "p50"},
		{name: "no format: the labels", format: "", labels: model.Metric{"__name__": "up", "job": "x"}, want: `up{job="x"}`},
		{name: "__auto: the labels", format: "__auto", labels: model.Metric{"le": "0.5"}, want: `{le="0.5"}`},
		{name: "no format, no labels: the expression", format: "", labels: model.Metric{}, want: "sum(x)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, legendName(tt.format, tt.labels, "sum(x)"))
		})
	}
}

func TestFormatValue(t *testing.T) {
	zero := 0
	two := 2
	tests := []struct {
		unit     string
		decimals *int
		v        float64
		want     string
	}{
		{"none", nil, 2, "2"},
		{"none", &zero, 2.4, "2"},
		{"", nil, 0.333333, "0.33"},
		{"", nil, 0.005, "0.005"},
		{"", nil, 12.26, "12.3"},
		{"", nil, 1234.6, "1235"},
		{"", nil, 1.5, "1.5"},
		{"", nil, -0.0001, "-0.0001"},
		{"short", nil, 12500, "12.5 K"},
		{"short", nil, 3.2e6, "3.2 Mil"},
		{"s", nil, 0, "0 s"},
		{"s", nil, 0.25, "250 ms"},
		{"s", nil, 0.0005, "500 µs"},
		{"s", nil, 2.5, "2.5 s"},
		{"s", nil, 90, "1.5 min"},
		{"s", &two, 1, "1.00 s"},
		{"ms", nil, 1500, "1.5 s"},
		{"percentunit", nil, 1, "100%"},
		{"percentunit", nil, 0.5, "50%"},
		{"percent", nil, 42, "42%"},
		{"reqps", nil, 0.8, "0.8 req/s"},
		{"bytes", nil, 3, "3 bytes"},
		{"s", nil, math.NaN(), "NaN"},
		{"none", nil, math.Inf(1), "+Inf"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, formatValue(tt.unit, tt.decimals, tt.v), "%s %v", tt.unit, tt.v)
	}
}
