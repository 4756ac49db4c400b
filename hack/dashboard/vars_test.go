package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSubstitute(t *testing.T) {
	vars := map[string]varValue{
		"__rate_interval": {values: []string{"1m"}, raw: true},
		"namespace":       {values: []string{`db'1\x`}},
		"name":            {values: []string{"a.b", "c"}, regex: true},
		"one":             {values: []string{"a.b"}, regex: true},
		"all":             {values: []string{".*"}, raw: true},
		"empty":           {},
	}
	tests := []struct {
		name, expr, want, err string
	}{
		{name: "no variables", expr: `sum(up{job=~"fedop$"})`, want: `sum(up{job=~"fedop$"})`},
		{name: "$name", expr: `rate(x[$__rate_interval])`, want: `rate(x[1m])`},
		{name: "${name}", expr: `rate(x[${__rate_interval}])`, want: `rate(x[1m])`},
		{name: "[[name]]", expr: `rate(x[[[__rate_interval]]])`, want: `rate(x[1m])`},
		{name: "single value: string escape", expr: `x{namespace="$namespace"}`, want: `x{namespace="db\'1\\x"}`},
		{name: "multi value: regex escape, alternation", expr: `x{name=~"$name"}`, want: `x{name=~"(a\\.b|c)"}`},
		{name: "multi variable with one value: no parentheses", expr: `x{name=~"$one"}`, want: `x{name=~"a\\.b"}`},
		{name: "raw allValue", expr: `x{name=~"$all"}`, want: `x{name=~".*"}`},
		{name: "several references", expr: `x{namespace="$namespace",name=~"${name}"}[$__rate_interval]`,
			want: `x{namespace="db\'1\\x",name=~"(a\\.b|c)"}[1m]`},
		{name: "undefined", expr: `x{namespace="$cluster"}`, err: `variable "cluster" has no value`},
		{name: "no value", expr: `x{namespace="$empty"}`, err: `variable "empty" has no value`},
		{name: "format", expr: `x{name=~"${name:csv}"}`, err: "formats are not implemented"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := substitute(tt.expr, vars)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestBuiltinVars(t *testing.T) {
	start := time.Date(2025, 11, 23, 10, 0, 0, 0, time.UTC)
	w := window{Start: start, End: start.Add(150 * time.Second), Step: 2 * time.Second}
	got := builtinVars(w, time.Minute)
	want := map[string]string{
		"__rate_interval": "1m",
		"__interval":      "2s",
		"__interval_ms":   "2000",
		"__range":         "2m30s",
		"__range_s":       "150",
		"__range_ms":      "150000",
	}
	require.Len(t, got, len(want))
	for name, v := range want {
		assert.Equal(t, v, got[name].expand(), name)
	}
}

func TestDashboardVars(t *testing.T) {
	var d dashboard
	d.Templating.List = []variable{
		{Name: "datasource", Type: "datasource"},
		{Name: "env", Type: "constant", Query: []byte(`"prod"`)},
		{Name: "namespace", Type: "custom", Current: struct {
			Value stringList `json:"value"`
		}{Value: stringList{"db"}}},
		{Name: "name", Type: "query", IncludeAll: true, AllValue: ".+", Current: struct {
			Value stringList `json:"value"`
		}{Value: stringList{allValue}}},
		{Name: "member", Type: "query", Multi: true, Current: struct {
			Value stringList `json:"value"`
		}{Value: stringList{allValue}}, Options: []struct {
			Value stringList `json:"value"`
		}{{Value: stringList{allValue}}, {Value: stringList{"k8s-a"}}, {Value: stringList{"k8s-b"}}}},
	}
	vars := dashboardVars(d, map[string]string{"namespace": "cache", "extra": "x"})

	assert.Empty(t, vars["datasource"].values, "a data source variable without a saved value has none")
	assert.Equal(t, "prod", vars["env"].expand(), "a constant is its query")
	assert.Equal(t, "cache", vars["namespace"].expand(), "-var wins over the saved value")
	assert.Equal(t, ".+", vars["name"].expand(), "All is the allValue, as it is")
	assert.Equal(t, "(k8s-a|k8s-b)", vars["member"].expand(), "All without an allValue is every option")
	assert.Equal(t, "x", vars["extra"].expand(), "-var may define a variable the dashboard does not")
}

func TestStringListUnmarshal(t *testing.T) {
	for in, want := range map[string]stringList{`"a"`: {"a"}, `["a","b"]`: {"a", "b"}, `null`: nil} {
		var s stringList
		require.NoError(t, s.UnmarshalJSON([]byte(in)), in)
		assert.Equal(t, want, s, in)
	}
	var s stringList
	assert.Error(t, s.UnmarshalJSON([]byte(`{}`)))
}

// TestDashboardQueriesSubstitute checks that every query of the project's
// dashboard substitutes with the renderer's variables, leaving no
// variable behind, and that $__rate_interval is what verify-dashboard.sh
// checks the queries with.
func TestDashboardQueriesSubstitute(t *testing.T) {
	d, err := loadDashboard("../../config/grafana/dashboard.json")
	require.NoError(t, err)
	start := time.Date(2025, 11, 23, 10, 0, 0, 0, time.UTC)
	w := window{Start: start, End: start.Add(3 * time.Minute), Step: 2 * time.Second}
	vars := mergeVars(builtinVars(w, defaultRateInterval), dashboardVars(d, nil))
	n := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			got, err := substitute(tg.Expr, vars)
			require.NoError(t, err, "%s: %s", p.Title, tg.Expr)
			assert.NotContains(t, got, "$", p.Title)
			assert.Equal(t, strings.ReplaceAll(tg.Expr, "$__rate_interval", "1m"), got, p.Title)
			n++
		}
	}
	assert.Positive(t, n)
}
