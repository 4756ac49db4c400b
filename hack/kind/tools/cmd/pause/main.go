// Command pause is the pod sandbox's placeholder process in fedop's offline
// kind node image, where registry.k8s.io/pause cannot be pulled. It sleeps
// until SIGINT or SIGTERM and then exits 0. When a pod shares one process
// namespace, the sandbox process is that namespace's init, so it also reaps
// every child that is handed to it and exits.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// Buffered so that signals arriving while a batch of children is reaped
	// are not lost; SIGCHLD coalesces anyway, hence the reap loop below.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
