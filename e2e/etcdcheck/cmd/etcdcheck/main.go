// Command etcdcheck runs the etcd checker (package etcdcheck) once, as a
// Job in a member cluster or as a process, and prints its report at the
// end: a line for people, then the JSON report as the last line of
// stdout. It exits 0 when the report is OK, 1 when it is not (or the run
// could not complete), 2 on bad flags.
//
// It writes until one of these stops it: SIGTERM or SIGINT, --duration,
// the file --stop-file appearing, or GET (or POST) /stop on --listen. Then
// it reads back and checks, which can take a while (--read-back-timeout
// plus --check-timeout at most): give a Job's pod a grace period that
// long. GET /progress on --listen returns the counts so far as JSON.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/fedop-io/fedop/e2e/etcdcheck"
)

func main() {
	os.Exit(run())
}

func run() int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("component", "etcdcheck")
	var cfg etcdcheck.Config
	endpoints := flag.String("endpoints", "", "comma-separated client URLs of the etcd members (http://host:2379); required")
	flag.StringVar(&cfg.Prefix, "prefix", "k/", "key prefix; deleted at the start")
	flag.IntVar(&cfg.Writers, "writers", 2, "concurrent writers")
	flag.IntVar(&cfg.Readers, "readers", 1, "concurrent readers of recent keys")
	flag.DurationVar(&cfg.Pause, "pause", 10*time.Millisecond, "pause of each writer and reader between two operations")
	flag.DurationVar(&cfg.OpTimeout, "op-timeout", 2*time.Second, "timeout of one put or get; a put that times out has an unknown outcome")
	flag.DurationVar(&cfg.SampleInterval, "sample-interval", 200*time.Millisecond, "period of the members' status and health samples")
	flag.DurationVar(&cfg.ReadBackTimeout, "read-back-timeout", time.Minute, "timeout of the member lists and of the read-back")
	flag.DurationVar(&cfg.CheckTimeout, "check-timeout", 2*time.Minute, "timeout of the linearizability check (0: none)")
	flag.StringVar(&cfg.VisualizePath, "visualize", "", "write porcupine's HTML visualization here if the history is not linearizable")
	duration := flag.Duration("duration", 0, "stop writing after this long (0: only when told to stop)")
	stopFile := flag.String("stop-file", "", "stop writing when this file exists (polled every 500 ms)")
	listen := flag.String("listen", ":8080", "address for GET /stop and GET /progress (empty: none)")
	flag.Parse()
	if *endpoints == "" {
		fmt.Fprintln(os.Stderr, "etcdcheck: --endpoints is required")
		flag.Usage()
		return 2
	}
	cfg.Endpoints = strings.Split(*endpoints, ",")
	cfg.Log = log
	c, err := etcdcheck.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdcheck:", err)
		return 2
	}
	defer func() { _ = c.Close() }() // at exit: a close error changes nothing the report says

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if *duration > 0 {
		var cancelTimeout context.CancelFunc
		ctx, cancelTimeout = context.WithTimeoutCause(ctx, *duration, errors.New("--duration elapsed"))
		defer cancelTimeout()
	}
	if *stopFile != "" {
		go func() {
			_ = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(context.Context) (bool, error) {
				_, err := os.Stat(*stopFile)
				return err == nil, nil
			})
			cancel(fmt.Errorf("%s exists", *stopFile))
		}()
	}
	if *listen != "" {
		ln, err := net.Listen("tcp", *listen)
		if err != nil {
			fmt.Fprintln(os.Stderr, "etcdcheck:", err)
			return 2
		}
		srv := &http.Server{Handler: control(c, cancel), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer func() { _ = srv.Close() }() // at exit: nothing is left to serve
	}
	go func() {
		<-ctx.Done()
		log.Info("Stopping", "reason", context.Cause(ctx))
		stop() // a second SIGTERM ends the process at once
	}()

	report, err := c.Run(ctx)
	if err != nil {
		log.Error("Run failed", "error", err)
	}
	fmt.Println(report.Summary())
	line, err := json.Marshal(report)
	if err != nil {
		log.Error("Cannot encode the report", "error", err)
		return 1
	}
	fmt.Println(string(line))
	if !report.OK {
		return 1
	}
	return 0
}

// control serves GET or POST /stop, which ends the writing, and GET
// /progress, the counts so far as JSON.
func control(c *etcdcheck.Checker, cancel context.CancelCauseFunc) http.Handler {
	mux := http.NewServeMux()
	stop := func(w http.ResponseWriter, _ *http.Request) {
		cancel(errors.New("/stop requested"))
		_, _ = fmt.Fprintln(w, "stopping") // the stop goes ahead whether the caller reads this or not
	}
	mux.HandleFunc("GET /stop", stop)
	mux.HandleFunc("POST /stop", stop)
	mux.HandleFunc("GET /progress", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(c.Progress())
	})
	return mux
}
