// Command dashboard draws fedop's Grafana dashboard
// (config/grafana/dashboard.json) into one PNG from a Prometheus server's
// data, without Grafana: Grafana can be neither installed nor built on
// this project's machines (README, "Metrics"), and the issue asks for the
// dashboard rendered once and looked at. hack/verify-dashboard.sh (`make
// verify-dashboard`) runs it against the Prometheus that scraped its lab,
// and it writes docs/dashboard.png.
//
// What it does, and how it differs from Grafana:
//
//   - Every target's expr is run as a range query (Prometheus's HTTP API,
//     through client_golang's api/prometheus/v1) over one window, the lab
//     run's, at one step. Targets marked instant are range queries too;
//     stat and bar gauge panels show the last value of each series, which
//     is what their reduceOptions (lastNotNull) take.
//   - Dashboard variables are substituted as vars.go says: the dashboard's
//     own (templating), values given with -var, and Grafana's built-ins
//     $__rate_interval, $__interval and $__range. $__rate_interval is 1m
//     unless -rate-interval says otherwise, the value verify-dashboard.sh
//     gives it when it checks the queries; Grafana would derive it from
//     the scrape interval and the step.
//   - Panels are placed by their gridPos on Grafana's grid (24 columns,
//     rows of 30px with 8px between), and drawn with gonum.org/v1/plot in
//     a light theme of its own: time series as lines, state timelines as
//     bands coloured by the panel's thresholds, the heatmap as cells of the
//     increase per histogram bucket, stat and bar gauge panels as their
//     last value. Legends use the targets' legendFormat; values the panel's
//     unit.
//   - A caption on the image says that hack/dashboard drew it, not
//     Grafana, and from which run's data.
//
// It reads from Prometheus and writes one file; it must not change
// anything else, and it must not invent a value: a panel whose queries
// return nothing says "No data", and a query that fails fails the command.
package main
