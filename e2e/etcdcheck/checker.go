package etcdcheck

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Config is what one run of the checker does.
type Config struct {
	// Endpoints are the members' client URLs (http://host:2379): in a
	// federation, the stable cross-cluster names. At least one.
	Endpoints []string
	// Prefix is the keys' prefix; the run deletes every key under it
	// before it starts. Not empty.
	Prefix string
	// Writers is the number of concurrent writers (at least 1), Readers
	// the number of concurrent readers of recently written keys.
	Writers, Readers int
	// Pause is how long each writer and reader waits between two of its
	// operations; 0 for none.
	Pause time.Duration
	// OpTimeout bounds one put or get; one that times out is Unknown.
	OpTimeout time.Duration
	// SampleInterval is how often the members' status and health are
	// sampled (200 ms in the e2e suite).
	SampleInterval time.Duration
	// ReadBackTimeout bounds the read-back after the writers stopped.
	ReadBackTimeout time.Duration
	// CheckTimeout bounds porcupine's check; 0 for no limit.
	CheckTimeout time.Duration
	// VisualizePath, when set, is where porcupine's HTML visualization of
	// the history goes if it is not linearizable.
	VisualizePath string
	// Log gets progress lines; nil discards them.
	Log *slog.Logger
}

// readBackPage is how many keys one read-back request returns at most.
const readBackPage = 5000

// Checker writes keys <prefix><seq> with their sequence number as value,
// reads recent ones back, samples the members, and checks the history.
// Make one with New, use it for one Run, then Close it.
type Checker struct {
	cfg     Config
	cli     *clientv3.Client
	mon     *monitor
	history history
	// next is the next sequence number; keys [0, next) have been put.
	next atomic.Int64
	// start is when the writers started (nil before); Op times count from
	// it. Atomic: Progress reads it from another goroutine.
	start atomic.Pointer[time.Time]
	// acked, failed and unknown count puts by outcome, for Progress.
	acked, failed, unknown atomic.Int64
}

// New checks cfg and makes a checker with an etcd client of its
// endpoints. It does not contact them yet.
func New(cfg Config) (*Checker, error) {
	switch {
	case len(cfg.Endpoints) == 0:
		return nil, errors.New("no endpoints")
	case cfg.Prefix == "":
		return nil, errors.New("empty key prefix")
	case cfg.Writers < 1 || cfg.Readers < 0:
		return nil, fmt.Errorf("need at least 1 writer and 0 readers, not %d and %d", cfg.Writers, cfg.Readers)
	case cfg.OpTimeout <= 0 || cfg.SampleInterval <= 0 || cfg.ReadBackTimeout <= 0:
		return nil, errors.New("operation timeout, sample interval and read-back timeout must be positive")
	}
	cfg.Endpoints = slices.Clone(cfg.Endpoints)
	for i, ep := range cfg.Endpoints {
		if !strings.Contains(ep, "://") {
			cfg.Endpoints[i] = "http://" + ep
		}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	cli, err := newClient(cfg.Endpoints...)
	if err != nil {
		return nil, err
	}
	mon, err := newMonitor(cfg.Endpoints)
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	return &Checker{cfg: cfg, cli: cli, mon: mon}, nil
}

// newClient makes an etcd client of endpoints.
func newClient(endpoints ...string) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		// gRPC refuses keepalive pings more often than every 10 s; they
		// notice a member that stopped answering without closing.
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
		Logger:               zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client of %v: %w", endpoints, err)
	}
	return cli, nil
}

// Close closes the etcd clients.
func (c *Checker) Close() error {
	c.mon.close()
	return c.cli.Close()
}

// Run lists the members, clears the prefix, then writes, reads and samples
// until ctx is done; then it lists the members again, reads every key back
// with linearizable reads, and checks the history. Operations in flight
// when ctx ends finish under their own timeout, so stopping makes no
// operation Unknown. The returned error says why the run could not
// complete (the start, or the read-back, failed); the report then carries
// it too, and OK is false.
func (c *Checker) Run(ctx context.Context) (Report, error) {
	r := Report{Endpoints: c.cfg.Endpoints}
	fail := func(err error) (Report, error) {
		r.Error = err.Error()
		return r, err
	}
	sctx, cancel := context.WithTimeout(context.Background(), c.cfg.ReadBackTimeout)
	defer cancel()
	var err error
	if r.MembersStart, err = c.members(sctx); err != nil {
		return fail(fmt.Errorf("member list at the start: %w", err))
	}
	if _, err := c.cli.Delete(sctx, c.cfg.Prefix, clientv3.WithPrefix()); err != nil {
		return fail(fmt.Errorf("clear prefix %q: %w", c.cfg.Prefix, err))
	}

	r.Start = time.Now()
	c.start.Store(&r.Start)
	mctx, stopMonitor := context.WithCancel(context.Background())
	monitorDone := make(chan struct{})
	go func() {
		c.mon.run(mctx, c.cfg.SampleInterval)
		close(monitorDone)
	}()
	c.cfg.Log.Info("Writing", "endpoints", c.cfg.Endpoints, "writers", c.cfg.Writers, "readers", c.cfg.Readers)
	var wg sync.WaitGroup
	for i := range c.cfg.Writers {
		wg.Go(func() { c.write(ctx, i) })
	}
	for i := range c.cfg.Readers {
		wg.Go(func() { c.read(ctx, c.cfg.Writers+i) })
	}
	<-ctx.Done()
	end := c.since()
	wg.Wait()
	stopMonitor()
	<-monitorDone
	c.cfg.Log.Info("Stopped writing; reading back", "progress", c.Progress())

	rctx, cancel := context.WithTimeout(context.Background(), c.cfg.ReadBackTimeout)
	defer cancel()
	if r.MembersEnd, err = c.members(rctx); err != nil {
		return fail(fmt.Errorf("member list at the end: %w", err))
	}
	readBack, err := c.readBack(rctx)
	if err != nil {
		return fail(fmt.Errorf("read back: %w", err))
	}
	a, info := Analyze(c.history.snapshot(), readBack, end, c.cfg.CheckTimeout)
	a.Start, a.DurationSeconds, a.Endpoints = r.Start, end.Seconds(), r.Endpoints
	a.MembersStart, a.MembersEnd = r.MembersStart, r.MembersEnd
	a.LeaderChanges, a.MinHealthyMembers, a.HealthSamples = c.mon.facts()
	a.ElectingSamples = c.mon.electingSamples()
	if at, why := c.mon.worst(); len(why) > 0 {
		a.WorstSample = fmt.Sprintf("at %.1fs: %s", at.Sub(r.Start).Seconds(), strings.Join(why, "; "))
	}
	a.OK = a.LostWrites == 0 && a.Linearizability == porcupine.Ok
	if a.Linearizability != porcupine.Ok && c.cfg.VisualizePath != "" {
		if err := porcupine.VisualizePath(model, info, c.cfg.VisualizePath); err != nil {
			c.cfg.Log.Error("Cannot write the visualization", "path", c.cfg.VisualizePath, "error", err)
		}
	}
	return a, nil
}

// Progress is a running checker's counts so far.
type Progress struct {
	ElapsedSeconds     float64 `json:"elapsedSeconds"`
	AcknowledgedWrites int64   `json:"acknowledgedWrites"`
	FailedWrites       int64   `json:"failedWrites"`
	UnknownWrites      int64   `json:"unknownWrites"`
	LeaderChanges      int     `json:"leaderChanges"`
	MinHealthyMembers  int     `json:"minHealthyMembers"`
	HealthSamples      int     `json:"healthSamples"`
}

// Progress returns the counts so far; safe to call while Run runs.
func (c *Checker) Progress() Progress {
	p := Progress{
		AcknowledgedWrites: c.acked.Load(),
		FailedWrites:       c.failed.Load(),
		UnknownWrites:      c.unknown.Load(),
	}
	if c.start.Load() != nil {
		p.ElapsedSeconds = c.since().Seconds()
	}
	p.LeaderChanges, p.MinHealthyMembers, p.HealthSamples = c.mon.facts()
	return p
}

// since is the time since the writers started.
func (c *Checker) since() time.Duration { return time.Since(*c.start.Load()) }

// key is the key of sequence number seq: zero-padded, so that key order is
// sequence order.
func (c *Checker) key(seq int64) string { return fmt.Sprintf("%s%010d", c.cfg.Prefix, seq) }

// write puts the next key until ctx is done.
func (c *Checker) write(ctx context.Context, client int) {
	for ctx.Err() == nil {
		seq := c.next.Add(1) - 1
		op := Op{Client: client, Put: true, Key: c.key(seq), Value: strconv.FormatInt(seq, 10), Call: c.since()}
		octx, cancel := context.WithTimeout(context.Background(), c.cfg.OpTimeout)
		_, err := c.cli.Put(octx, op.Key, op.Value)
		cancel()
		op.Return, op.Outcome = c.since(), outcome(err)
		c.history.add(op)
		switch op.Outcome {
		case Acknowledged:
			c.acked.Add(1)
		case Failed:
			c.failed.Add(1)
		default:
			c.unknown.Add(1)
		}
		c.pause(ctx)
	}
}

// read gets one of the 50 most recently begun keys, linearizably, until
// ctx is done: some written long ago, some being written.
func (c *Checker) read(ctx context.Context, client int) {
	for ctx.Err() == nil {
		if n := c.next.Load(); n > 0 {
			op := Op{Client: client, Key: c.key(n - 1 - rand.Int64N(min(n, 50))), Call: c.since()}
			octx, cancel := context.WithTimeout(context.Background(), c.cfg.OpTimeout)
			resp, err := c.cli.Get(octx, op.Key)
			cancel()
			op.Return, op.Outcome = c.since(), outcome(err)
			if err == nil && len(resp.Kvs) > 0 {
				op.Found, op.Value = true, string(resp.Kvs[0].Value)
			}
			c.history.add(op)
		}
		c.pause(ctx)
	}
}

// pause waits Config.Pause, or until ctx is done.
func (c *Checker) pause(ctx context.Context) {
	if c.cfg.Pause <= 0 {
		return
	}
	t := time.NewTimer(c.cfg.Pause)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// readBack reads every key the run put, in pages of linearizable range
// reads, and returns one get per key: found or not, timed by its page.
func (c *Checker) readBack(ctx context.Context) ([]Op, error) {
	n := c.next.Load()
	ops := make([]Op, 0, n)
	client := c.cfg.Writers + c.cfg.Readers
	end := clientv3.GetPrefixRangeEnd(c.cfg.Prefix)
	from, seq := c.cfg.Prefix, int64(0)
	for seq < n {
		call := c.since()
		resp, err := c.cli.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(readBackPage))
		if err != nil {
			return nil, err
		}
		ret := c.since()
		got := make(map[string]string, len(resp.Kvs))
		last := end // the page covers [from, last]
		for _, kv := range resp.Kvs {
			got[string(kv.Key)] = string(kv.Value)
			last = string(kv.Key)
		}
		if !resp.More {
			last = end
		}
		for ; seq < n && c.key(seq) <= last; seq++ {
			v, found := got[c.key(seq)]
			ops = append(ops, Op{Client: client, Key: c.key(seq), Value: v, Found: found, Outcome: Acknowledged, Call: call, Return: ret})
		}
		from = last + "\x00"
	}
	return ops, nil
}

// members returns the cluster's member list.
func (c *Checker) members(ctx context.Context) ([]Member, error) {
	resp, err := c.cli.MemberList(ctx)
	if err != nil {
		return nil, err
	}
	var ms []Member
	for _, m := range resp.Members {
		ms = append(ms, Member{ID: fmt.Sprintf("%x", m.ID), Name: m.Name})
	}
	return ms, nil
}
