package testenv

import (
	"errors"
	"io"
	"net"
	"sync"
)

// Proxy forwards TCP connections from a local address to an API server, so
// that a test can make a member unreachable and reachable again without
// stopping it: Sever closes every connection and refuses new ones (as a
// network partition would), Restore lets them through again.
type Proxy struct {
	ln     net.Listener
	target string

	// mu guards severed and conns.
	mu      sync.Mutex
	severed bool
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

// newProxy listens on 127.0.0.1 at a free port and forwards to target
// (host:port).
func newProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.serve)
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		if !p.track(in) {
			_ = in.Close()
			continue
		}
		p.wg.Go(func() { p.forward(in) })
	}
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.severed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

func (p *Proxy) forward(in net.Conn) {
	defer p.untrack(in)
	defer func() { _ = in.Close() }()
	out, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	if !p.track(out) {
		_ = out.Close()
		return
	}
	defer p.untrack(out)
	defer func() { _ = out.Close() }()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(out, in); done <- struct{}{} }()
	go func() { _, _ = io.Copy(in, out); done <- struct{}{} }()
	<-done // one direction ended: end both
}

// Sever closes every open connection and refuses new ones until Restore.
func (p *Proxy) Sever() {
	p.mu.Lock()
	p.severed = true
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// Restore lets connections through again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.severed = false
}

// Close stops the proxy and waits for its goroutines.
func (p *Proxy) Close() error {
	p.Sever()
	err := p.ln.Close()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
