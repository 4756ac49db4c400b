package testenv

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// Proxy forwards TCP connections from a local address to an API server, so
// that a test can make a member unreachable and reachable again without
// stopping it: Sever closes every connection and refuses new ones (as a
// network partition that resets connections would), Restore lets them
// through again; Freeze stops every byte in both directions while keeping
// the connections open and accepting new ones (as a server stopped with
// SIGSTOP, or a partition that drops packets, would), Thaw delivers what
// waited and lets everything flow again.
type Proxy struct {
	ln     net.Listener
	target string

	// mu guards severed, frozen, lastAnswer and conns; thawed is broadcast
	// when frozen is cleared.
	mu     sync.Mutex
	thawed *sync.Cond
	// severed refuses connections; frozen holds every byte.
	severed, frozen bool
	// lastAnswer is when the API server last sent bytes through the proxy.
	lastAnswer time.Time
	conns      map[net.Conn]struct{}
	wg         sync.WaitGroup
}

// NewProxy listens on 127.0.0.1 at a free port and forwards to target
// (host:port) until Close.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.thawed = sync.NewCond(&p.mu)
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
	go func() { p.copy(out, in, false); done <- struct{}{} }()
	go func() { p.copy(in, out, true); done <- struct{}{} }()
	<-done // one direction ended: end both
}

// copy copies src to dst until either fails, holding each chunk while the
// proxy is frozen. answers says that src is the API server: its bytes
// stamp lastAnswer when they pass.
func (p *Proxy) copy(dst io.Writer, src io.Reader, answers bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.frozen {
				p.thawed.Wait()
			}
			if answers {
				p.lastAnswer = time.Now()
			}
			p.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Freeze holds every byte in both directions, and keeps connections open,
// until Thaw.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frozen = true
}

// Thaw lets the bytes Freeze held, and all after, through.
func (p *Proxy) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frozen = false
	p.thawed.Broadcast()
}

// LastAnswer returns when the API server last sent bytes through the proxy
// (a frozen proxy holds them: they have not been answered).
func (p *Proxy) LastAnswer() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastAnswer
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
	p.Thaw()
	p.Sever()
	err := p.ln.Close()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
