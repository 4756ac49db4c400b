package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/prometheus/procfs"
)

// What the benchmark reads of this machine's processes, through
// prometheus/procfs: the CPU, memory and command line of the processes it
// measures or started, and the machine's memory and load.

// cpuSeconds returns the user and system CPU time process pid has used, in
// seconds (utime and stime of /proc/<pid>/stat).
func cpuSeconds(pid int) (float64, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, err
	}
	st, err := p.Stat()
	if err != nil {
		return 0, err
	}
	return st.CPUTime(), nil
}

// rssBytes returns the VmRSS of process pid (/proc/<pid>/status), in
// bytes.
func rssBytes(pid int) (float64, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, err
	}
	st, err := p.NewStatus()
	if err != nil {
		return 0, err
	}
	return float64(st.VmRSS), nil
}

// managerAlive reports whether process pid is a fedop-manager that has not
// exited. A zombie has (the main manager is hack/bench.sh's child: it
// stays a zombie until the shell reaps it), and a pid whose command is not
// fedop-manager was reused by another process after the manager exited.
func managerAlive(pid int) bool {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return false
	}
	argv, err := p.CmdLine()
	if err != nil || len(argv) == 0 || filepath.Base(argv[0]) != "fedop-manager" {
		return false
	}
	st, err := p.Stat()
	return err == nil && st.State != "Z"
}

// commandLine returns the arguments process pid was started with, joined
// by spaces, for the report.
func commandLine(pid int) (string, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return "", err
	}
	argv, err := p.CmdLine()
	if err != nil {
		return "", err
	}
	return strings.Join(argv, " "), nil
}

// memAvailable returns MemAvailable from /proc/meminfo, in bytes.
func memAvailable() (float64, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, err
	}
	mi, err := fs.Meminfo()
	if err != nil {
		return 0, err
	}
	if mi.MemAvailableBytes == nil {
		return 0, errors.New("no MemAvailable in /proc/meminfo")
	}
	return float64(*mi.MemAvailableBytes), nil
}

// loadAverage returns /proc/loadavg's 1, 5 and 15 minute averages, or
// "unknown".
func loadAverage() string {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return "unknown"
	}
	l, err := fs.LoadAvg()
	if err != nil {
		return "unknown"
	}
	return fmt.Sprintf("%.2f %.2f %.2f", l.Load1, l.Load5, l.Load15)
}

// memoryAndCPUModel returns the machine's memory (MemTotal, "<n> kB" as
// /proc/meminfo gives it) and its first CPU's model name, empty where
// unknown.
func memoryAndCPUModel() (memory, model string) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return "", ""
	}
	if mi, err := fs.Meminfo(); err == nil && mi.MemTotal != nil {
		memory = fmt.Sprintf("%d kB", *mi.MemTotal)
	}
	if ci, err := fs.CPUInfo(); err == nil && len(ci) > 0 {
		model = ci[0].ModelName
	}
	return memory, model
}

// otherAPIServers counts the kube-apiserver processes on this machine that
// are not the bench lab's: other labs (a developer's, a test suite's)
// compete for the same cores and make the figures worse.
func (b *bench) otherAPIServers() int {
	abs, err := filepath.Abs(b.labDir)
	if err != nil {
		abs = b.labDir
	}
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return -1
	}
	procs, err := fs.AllProcs()
	if err != nil {
		return -1
	}
	n := 0
	for _, p := range procs {
		argv, err := p.CmdLine()
		if err != nil || len(argv) == 0 {
			continue // gone meanwhile, or a kernel thread
		}
		if filepath.Base(argv[0]) == "kube-apiserver" && !strings.Contains(strings.Join(argv, "\x00"), abs+"/") {
			n++
		}
	}
	return n
}
