package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	dashboard, prometheus, out, note string
	start, end                       time.Time
	step, rateInterval               time.Duration
	vars                             map[string]string
	width                            float64
	scale                            int
}

// defaultPoints is how many steps the window has when -step is not given.
const defaultPoints = 400

func parseFlags() (options, error) {
	o := options{vars: map[string]string{}}
	var start, end string
	flag.StringVar(&o.dashboard, "dashboard", "config/grafana/dashboard.json", "The Grafana dashboard JSON to draw.")
	flag.StringVar(&o.prometheus, "prometheus", "", "The Prometheus server to query, e.g. http://127.0.0.1:9090 (required).")
	flag.StringVar(&o.out, "out", "docs/dashboard.png", "The PNG to write.")
	flag.StringVar(&start, "start", "", "The start of the window: RFC 3339 or Unix seconds (default: an hour before -end).")
	flag.StringVar(&end, "end", "", "The end of the window: RFC 3339 or Unix seconds (default: now).")
	flag.DurationVar(&o.step, "step", 0, fmt.Sprintf("The step of the range queries (default: the window / %d, at least 1s).", defaultPoints))
	flag.DurationVar(&o.rateInterval, "rate-interval", defaultRateInterval, "What $__rate_interval stands for.")
	flag.Func("var", "A dashboard variable's value, name=value; repeat for more.", func(s string) error {
		name, value, ok := strings.Cut(s, "=")
		if !ok || name == "" {
			return errors.New("want name=value")
		}
		o.vars[name] = value
		return nil
	})
	flag.StringVar(&o.note, "note", "", "A line added to the caption, e.g. what the lab run did.")
	flag.Float64Var(&o.width, "width", 1600, "The page's width in pixels (before -scale).")
	flag.IntVar(&o.scale, "scale", 1, "Pixels per layout pixel (2 for a sharper image of the same layout).")
	flag.Parse()
	if o.prometheus == "" {
		return o, errors.New("-prometheus is required")
	}
	var err error
	o.end = time.Now()
	if end != "" {
		if o.end, err = parseTime(end); err != nil {
			return o, fmt.Errorf("-end: %w", err)
		}
	}
	o.start = o.end.Add(-time.Hour)
	if start != "" {
		if o.start, err = parseTime(start); err != nil {
			return o, fmt.Errorf("-start: %w", err)
		}
	}
	if !o.start.Before(o.end) {
		return o, fmt.Errorf("-start %s is not before -end %s", o.start, o.end)
	}
	if o.step == 0 {
		o.step = max((o.end.Sub(o.start) / defaultPoints).Round(time.Second), time.Second)
	}
	if o.step <= 0 || o.rateInterval <= 0 {
		return o, errors.New("-step and -rate-interval must be positive")
	}
	if o.width < 400 || o.scale < 1 || o.scale > 4 {
		return o, errors.New("-width must be at least 400 and -scale 1 to 4")
	}
	return o, nil
}

// parseTime reads RFC 3339 or Unix seconds (with a fraction).
func parseTime(s string) (time.Time, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		sec := int64(f)
		return time.Unix(sec, int64((f-float64(sec))*1e9)), nil
	}
	return time.Parse(time.RFC3339, s)
}

func run() error {
	o, err := parseFlags()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	d, err := loadDashboard(o.dashboard)
	if err != nil {
		return err
	}
	client, err := api.NewClient(api.Config{Address: o.prometheus})
	if err != nil {
		return fmt.Errorf("prometheus client: %w", err)
	}
	w := window{Start: o.start, End: o.end, Step: o.step}
	vars := mergeVars(builtinVars(w, o.rateInterval), dashboardVars(d, o.vars))
	panels, err := queryPanels(ctx, v1.NewAPI(client), d, vars, w, func(s string) {
		fmt.Fprintln(os.Stderr, "warning:", s)
	})
	if err != nil {
		return err
	}
	pg := page{
		Title:   fmt.Sprintf("%s  ·  %s", d.Title, o.dashboard),
		Caption: caption(w, o.rateInterval, o.note),
		Window:  w,
		Panels:  panels,
	}
	if err := writePNG(o.out, pg, o.width, o.scale); err != nil {
		return err
	}
	for _, p := range panels {
		if p.Type != "row" {
			fmt.Printf("%-42s %d series\n", p.Title, len(p.Series))
		}
	}
	fmt.Println("wrote", o.out)
	return nil
}

// caption is the image's caption: who drew it from what, and the note.
func caption(w window, rateInterval time.Duration, note string) []string {
	start, end := w.Start.UTC(), w.End.UTC()
	endFormat := "15:04:05"
	if start.YearDay() != end.YearDay() || start.Year() != end.Year() {
		endFormat = "2006-01-02 15:04:05"
	}
	lines := []string{fmt.Sprintf(
		"Drawn by hack/dashboard (Go, gonum.org/v1/plot), not by Grafana, from Prometheus data of a lab run from %s to %s UTC "+
			"(range queries, step %s, $__rate_interval %s).",
		start.Format("2006-01-02 15:04:05"), end.Format(endFormat), promDuration(w.Step), promDuration(rateInterval))}
	if note != "" {
		lines = append(lines, note)
	}
	return lines
}

// writePNG renders pg into path, through a temporary file in the same
// directory so that path is never a half-written image.
func writePNG(path string, pg page, width float64, scale int) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".dashboard-*.png")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) //nolint:errcheck // gone after the rename
	// CreateTemp makes the file private; the image is not.
	if err := f.Chmod(0o644); err != nil {
		f.Close() //nolint:errcheck // the chmod error is the one to report
		return err
	}
	if err := render(f, pg, width, scale); err != nil {
		f.Close() //nolint:errcheck // the render error is the one to report
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
