package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// run is the agent: it parses its flags and etcd's (after "--"), prepares
// the start (bootstrap), listens for hooks, starts etcd, forwards SIGTERM
// and SIGINT to it, and returns etcd's exit code: its own status, or 128+N
// when signal N killed it. It returns 2 for a usage error and 1 when etcd
// could not be started.
func run(argv []string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("component", "etcd-agent")
	fs := flag.NewFlagSet("etcd-agent", flag.ContinueOnError)
	etcdPath := fs.String("etcd", "etcd", "path of the etcd binary")
	listen := fs.String("listen", ":8080", "address of the hook server (/drain, /undrain, /healthz)")
	endpoints := fs.String("cluster-endpoints", "", "comma-separated client URLs of the cluster's members, asked for the member list "+
		"when the data dir holds no member; empty: an empty data dir always starts as given")
	joinTimeout := fs.Duration("join-timeout", 5*time.Second, "how long to wait for the cluster's member list when the data dir holds no member")
	fs.Usage = func() {
		_, _ = fmt.Fprintf(fs.Output(), "usage: etcd-agent [flags] -- [etcd flags, in the --flag=value form]\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(argv); err != nil {
		return 2
	}
	args := fs.Args()
	m, err := parseMember(args)
	if err != nil {
		log.Error("Bad etcd flags", "error", err)
		return 2
	}

	// Signals that arrive while the agent prepares the start wait in this
	// channel and go to etcd as soon as it runs: etcd then stops at once,
	// gracefully.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)

	var peers []string
	if *endpoints != "" {
		peers = strings.Split(*endpoints, ",")
	}
	args, err = bootstrap(context.Background(), log, args, m, peers, *joinTimeout)
	if err != nil {
		log.Error("Cannot prepare etcd's start", "error", err)
		return 1
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Error("Cannot listen for hooks", "address", *listen, "error", err)
		return 1
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.clientURL}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		log.Error("Cannot make the local etcd client", "endpoint", m.clientURL, "error", err)
		return 1
	}
	defer func() { _ = cli.Close() }()
	h := &hooks{log: log, cli: cli, local: m.clientURL, http: &http.Client{}}
	srv := &http.Server{Handler: h.handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("Hook server stopped", "error", err)
		}
	}()
	defer func() { _ = srv.Close() }()

	cmd := exec.Command(*etcdPath, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	// Outside a container (tests) nothing else would stop etcd if the agent
	// died; in one, the agent is PID 1 and its death ends the container.
	// The signal follows the thread that started etcd, so keep this
	// goroutine on it: it lives until etcd exits.
	runtime.LockOSThread()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	log.Info("Running etcd", "path", *etcdPath, "args", args)
	if err := cmd.Start(); err != nil {
		log.Error("Cannot start etcd", "error", err)
		return 1
	}
	go func() {
		for s := range sigs {
			log.Info("Forwarding signal to etcd", "signal", s)
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	code := exitCode(cmd.ProcessState)
	log.Info("etcd exited", "code", code, "error", err)
	return code
}

// exitCode is the shell's view of how a process ended: its exit status, or
// 128+N when signal N killed it.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
