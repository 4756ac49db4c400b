package main

import (
	"encoding/json"
	"fmt"
	"os"
)

// dashboard is the part of a Grafana dashboard JSON model (schemaVersion
// 39) that the renderer uses; everything else in the file is ignored.
type dashboard struct {
	Title      string `json:"title"`
	Templating struct {
		List []variable `json:"list"`
	} `json:"templating"`
	// Panels are the top-level panels: rows, and the panels of rows that
	// are not collapsed (a collapsed row holds its own in Panels).
	Panels []panel `json:"panels"`
}

// variable is one template variable of the dashboard (templating.list).
type variable struct {
	Name string `json:"name"`
	// Type is Grafana's variable type: query, custom, constant, textbox,
	// interval, datasource, ...
	Type    string `json:"type"`
	Current struct {
		Value stringList `json:"value"`
	} `json:"current"`
	// Multi and IncludeAll make the value a regular expression: Grafana
	// then escapes it for a regex and joins several values as (a|b).
	Multi      bool `json:"multi"`
	IncludeAll bool `json:"includeAll"`
	// AllValue replaces the value $__all ("All") when set.
	AllValue string `json:"allValue"`
	Options  []struct {
		Value stringList `json:"value"`
	} `json:"options"`
	// Query is a constant's value; for custom variables the
	// comma-separated list of values.
	Query json.RawMessage `json:"query"`
}

// stringList is a variable value, which Grafana stores as a string or, for
// multi-value variables, as a list of strings.
type stringList []string

// UnmarshalJSON accepts a string, a list of strings, or null.
func (s *stringList) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*s = nil
		return nil
	}
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = stringList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("a variable value is a string or a list of strings: %w", err)
	}
	*s = many
	return nil
}

// panel is one panel of the dashboard, or a row.
type panel struct {
	ID        int     `json:"id"`
	Type      string  `json:"type"`
	Title     string  `json:"title"`
	GridPos   gridPos `json:"gridPos"`
	Collapsed bool    `json:"collapsed"`
	// Panels are a collapsed row's panels, which Grafana does not show
	// until the row is expanded; the renderer does not draw them either.
	Panels      []panel  `json:"panels"`
	Targets     []target `json:"targets"`
	FieldConfig struct {
		Defaults fieldDefaults `json:"defaults"`
	} `json:"fieldConfig"`
	Options panelOptions `json:"options"`
}

// gridPos is a panel's place on Grafana's grid: X and W in columns (24 in
// all), Y and H in rows of 30px.
type gridPos struct {
	X int `json:"x"`
	Y int `json:"y"`
	W int `json:"w"`
	H int `json:"h"`
}

// target is one query of a panel.
type target struct {
	RefID string `json:"refId"`
	Expr  string `json:"expr"`
	// LegendFormat names each series: {{label}} is replaced by the
	// series' value of label (legendName).
	LegendFormat string `json:"legendFormat"`
	Hide         bool   `json:"hide"`
}

// fieldDefaults is fieldConfig.defaults: how values are shown.
type fieldDefaults struct {
	Unit     string   `json:"unit"`
	Decimals *int     `json:"decimals"`
	Min      *float64 `json:"min"`
	Max      *float64 `json:"max"`
	Color    struct {
		Mode       string `json:"mode"`
		FixedColor string `json:"fixedColor"`
	} `json:"color"`
	Thresholds struct {
		Steps []thresholdStep `json:"steps"`
	} `json:"thresholds"`
	Mappings []valueMapping `json:"mappings"`
	Custom   struct {
		LineWidth   float64 `json:"lineWidth"`
		FillOpacity float64 `json:"fillOpacity"`
	} `json:"custom"`
}

// thresholdStep is one step of absolute thresholds: values from Value up
// (Value nil: from minus infinity) get Color.
type thresholdStep struct {
	Color string   `json:"color"`
	Value *float64 `json:"value"`
}

// valueMapping maps values to texts (type "value"; other types are
// ignored).
type valueMapping struct {
	Type    string `json:"type"`
	Options map[string]struct {
		Text string `json:"text"`
	} `json:"options"`
}

// panelOptions are the options of the panel types the dashboard uses.
type panelOptions struct {
	// TextMode is a stat panel's: value, name, value_and_name.
	TextMode string `json:"textMode"`
	// RowHeight is a state timeline's band height, a fraction of its row.
	RowHeight float64 `json:"rowHeight"`
	// YAxis is a heatmap's y axis.
	YAxis struct {
		Unit string `json:"unit"`
	} `json:"yAxis"`
}

// loadDashboard reads a dashboard JSON file.
func loadDashboard(path string) (dashboard, error) {
	var d dashboard
	b, err := os.ReadFile(path)
	if err != nil {
		return d, err
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}
