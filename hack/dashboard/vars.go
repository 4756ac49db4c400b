package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// defaultRateInterval is what $__rate_interval stands for unless
// -rate-interval says otherwise: the value hack/verify-dashboard.sh
// substitutes when it checks every query, so that the image shows what
// the check ran.
const defaultRateInterval = time.Minute

// allValue is Grafana's stored value of a variable's "All" option.
const allValue = "$__all"

// varValue is what one variable expands to in a query.
type varValue struct {
	values []string
	// regex: the variable is multi-value or has an All option, so Grafana's
	// Prometheus data source escapes each value for a regular expression
	// and joins several as (a|b).
	regex bool
	// raw: inserted as it is (built-ins, a custom allValue).
	raw bool
}

// varPattern is Grafana's syntax for a variable reference (the regex of
// its TemplateSrv): $name, [[name]], [[name:format]], ${name},
// ${name.field}, ${name:format}. Groups 1, 2 and 4 are the name, 3 and 6
// a format.
var varPattern = regexp.MustCompile(`\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\$\{(\w+)(?:\.([^:^\}]+))?(?::([^\}]+))?\}`)

// substitute replaces the variable references in expr by their values in
// vars, escaped as Grafana's Prometheus data source does
// (interpolateQueryExpr). A reference to a variable that vars does not
// hold, or holds without a value, is an error: sent as it is, "$name"
// would be a syntax error or, inside a label matcher, match nothing. A
// format (${name:csv}) is not implemented and is an error too.
func substitute(expr string, vars map[string]varValue) (string, error) {
	var errs []string
	out := varPattern.ReplaceAllStringFunc(expr, func(ref string) string {
		m := varPattern.FindStringSubmatch(ref)
		name := m[1] + m[2] + m[4]
		if format := m[3] + m[6]; format != "" {
			errs = append(errs, fmt.Sprintf("%s: formats are not implemented", ref))
			return ref
		}
		v, ok := vars[name]
		if !ok || len(v.values) == 0 {
			errs = append(errs, fmt.Sprintf("%s: variable %q has no value (give one with -var %s=VALUE)", ref, name, name))
			return ref
		}
		return v.expand()
	})
	if len(errs) > 0 {
		return "", fmt.Errorf("%q: %s", expr, strings.Join(errs, "; "))
	}
	return out, nil
}

// expand is the text a reference to v becomes.
func (v varValue) expand() string {
	switch {
	case v.raw:
		return strings.Join(v.values, "|")
	case !v.regex:
		// prometheusRegularEscape: the value goes into a string literal.
		return strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v.values[0])
	}
	escaped := make([]string, len(v.values))
	for i, s := range v.values {
		// prometheusSpecialRegexEscape: a regex escape inside a PromQL
		// string, so the backslash itself is doubled.
		escaped[i] = strings.ReplaceAll(regexp.QuoteMeta(s), `\`, `\\`)
	}
	if len(escaped) == 1 {
		return escaped[0]
	}
	return "(" + strings.Join(escaped, "|") + ")"
}

// builtinVars are Grafana's global variables that a Prometheus query can
// use, for a range query over w: $__interval is the step, $__range the
// window, $__rate_interval rateInterval.
func builtinVars(w window, rateInterval time.Duration) map[string]varValue {
	r := w.End.Sub(w.Start)
	raw := func(s string) varValue { return varValue{values: []string{s}, raw: true} }
	return map[string]varValue{
		"__rate_interval": raw(promDuration(rateInterval)),
		"__interval":      raw(promDuration(w.Step)),
		"__interval_ms":   raw(strconv.FormatInt(w.Step.Milliseconds(), 10)),
		"__range":         raw(promDuration(r)),
		"__range_s":       raw(strconv.FormatInt(int64(r/time.Second), 10)),
		"__range_ms":      raw(strconv.FormatInt(r.Milliseconds(), 10)),
	}
}

// promDuration writes d as PromQL does (1m, 90s, 1h30m); below a
// millisecond it rounds up to 1ms, the smallest duration PromQL has.
func promDuration(d time.Duration) string {
	if d < time.Millisecond {
		d = time.Millisecond
	}
	return model.Duration(d).String()
}

// dashboardVars are the values of the dashboard's template variables: the
// current value saved in the dashboard (a constant's query), or the one
// in overrides (-var name=value), which wins. "All" becomes the
// variable's allValue, or all of its saved options.
func dashboardVars(d dashboard, overrides map[string]string) map[string]varValue {
	vars := map[string]varValue{}
	for _, v := range d.Templating.List {
		vv := varValue{values: v.Current.Value, regex: v.Multi || v.IncludeAll}
		if v.Type == "constant" || (v.Type == "textbox" && len(vv.values) == 0) {
			var q string
			if json.Unmarshal(v.Query, &q) == nil {
				vv.values = []string{q}
			}
		}
		if o, ok := overrides[v.Name]; ok {
			vv.values = []string{o}
		}
		if len(vv.values) == 1 && vv.values[0] == allValue {
			if v.AllValue != "" {
				vv = varValue{values: []string{v.AllValue}, raw: true}
			} else {
				vv.values = nil
				for _, o := range v.Options {
					for _, s := range o.Value {
						if s != allValue {
							vv.values = append(vv.values, s)
						}
					}
				}
			}
		}
		vars[v.Name] = vv
	}
	for name, o := range overrides {
		if _, ok := vars[name]; !ok {
			vars[name] = varValue{values: []string{o}}
		}
	}
	return vars
}

// mergeVars returns the variables of all of ms; a later map wins.
func mergeVars(ms ...map[string]varValue) map[string]varValue {
	out := map[string]varValue{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}
