package etcdcheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// sampleTimeout bounds one member's status and health in one sample when
// the member did not answer the sample before: a member that is down
// (stopped, its cluster paused) holds up each sample this long at most. A
// member that answered the sample before is given slowTimeout: on a
// machine whose CPU is saturated (four kind clusters on two cores) a live
// member's /health, a linearizable read, can take more than a second, and
// counting it as down would report a second member down where there is
// none. A member that takes longer counts as unhealthy in that sample.
const (
	sampleTimeout = time.Second
	slowTimeout   = 5 * time.Second
)

// electionGrace is how long a member that is up (it answers Status) but
// reports no leader on /health ("RAFT NO LEADER", or a read cut by
// "leader changed") still counts as healthy. A leadership transfer, which
// every drain of a leader makes, puts the followers in a new term with no
// leader until the new leader's first message reaches them: on a busy
// machine a sample can land in that window, which says nothing about a
// member being down. etcd's default election timeout is 1 s, within which
// a transfer or an election completes; twice that allows for a saturated
// machine. A member without a leader for longer counts as unhealthy.
const electionGrace = 2 * time.Second

// leaderless reports whether a /health answer says only that the member
// has no leader at the moment.
func leaderless(why string) bool {
	return strings.Contains(why, "RAFT NO LEADER") || strings.Contains(why, "leader changed")
}

// maxWarmupSamples bounds the warm-up: the samples taken before every
// member answered healthy once are not counted (the monitor's first
// connections and cross-cluster name lookups can take longer than
// sampleTimeout on a busy machine, which says nothing about the members),
// but only this many: a member that never answers is counted from then on.
const maxWarmupSamples = 50

// monitor samples every endpoint's Status (for the leader) and /health.
type monitor struct {
	// clients holds one client per endpoint, so that Status asks that
	// endpoint on a connection it keeps.
	clients   []*clientv3.Client
	http      *http.Client
	endpoints []string

	mu sync.Mutex // guards the fields below
	// samples counts complete samples; minHealthy is the fewest healthy
	// members in one of them.
	samples, minHealthy int
	// warm is set once a sample found every member healthy, or after
	// maxWarmupSamples; warmup counts the samples not counted before.
	warm   bool
	warmup int
	// leader is the last leader seen and term its Raft term; changes
	// counts the changes of leader.
	leader, term uint64
	changes      int
	// answered says, per endpoint, whether it answered the last sample;
	// leaderlessSince since when it has been up without a leader (zero
	// when it is not).
	answered        []bool
	leaderlessSince []time.Time
	// electing counts the samples in which a member was up without a
	// leader, within electionGrace.
	electing int
	// worstAt is when the sample with the fewest healthy members began,
	// and worstWhy why each member of it that was not healthy was not.
	worstAt  time.Time
	worstWhy []string
}

// newMonitor makes a monitor of endpoints, with a client for each. Close
// it.
func newMonitor(endpoints []string) (*monitor, error) {
	m := &monitor{http: &http.Client{}, endpoints: endpoints,
		answered: make([]bool, len(endpoints)), leaderlessSince: make([]time.Time, len(endpoints))}
	for _, ep := range endpoints {
		cli, err := newClient(ep)
		if err != nil {
			m.close()
			return nil, err
		}
		m.clients = append(m.clients, cli)
	}
	return m, nil
}

// close closes the clients.
func (m *monitor) close() {
	for _, cli := range m.clients {
		_ = cli.Close()
	}
}

// run samples every interval until ctx is done. A sample that takes longer
// than interval (a member that does not answer) delays the next one.
func (m *monitor) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		m.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sample asks every endpoint at once and records the result, unless ctx
// ended meanwhile (a sample cut short says nothing about the members).
func (m *monitor) sample(ctx context.Context) {
	type answer struct {
		// why is "" when the member answered 200, else why not; up is
		// whether it answered Status.
		why          string
		up           bool
		leader, term uint64
	}
	began := time.Now()
	answers := make([]answer, len(m.endpoints))
	m.mu.Lock()
	patience := make([]time.Duration, len(m.endpoints))
	for i, ok := range m.answered {
		patience[i] = sampleTimeout
		if ok {
			patience[i] = slowTimeout
		}
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for i, ep := range m.endpoints {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, patience[i])
			defer cancel()
			answers[i].why = m.health(ctx, ep, patience[i])
			// Not clientv3's Status, which waits for a connection to be
			// ready: a member that is down would hold up every sample.
			mc := pb.NewMaintenanceClient(m.clients[i].ActiveConnection())
			if st, err := mc.Status(ctx, &pb.StatusRequest{}, grpc.WaitForReady(false)); err == nil {
				answers[i].up, answers[i].leader, answers[i].term = true, st.Leader, st.RaftTerm
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	healthy, electing := 0, false
	var leader, term uint64
	var why []string
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, a := range answers {
		m.answered[i] = !strings.HasPrefix(a.why, noAnswer)
		if !a.up || !leaderless(a.why) {
			m.leaderlessSince[i] = time.Time{}
		} else if m.leaderlessSince[i].IsZero() {
			m.leaderlessSince[i] = began
		}
		switch {
		case a.why == "":
			healthy++
		case !m.leaderlessSince[i].IsZero() && began.Sub(m.leaderlessSince[i]) <= electionGrace:
			healthy++
			electing = true
		default:
			why = append(why, memberName(m.endpoints[i])+": "+a.why)
		}
		// The leader of the highest term wins: a member cut off from the
		// others may still name an old one.
		if a.leader != 0 && a.term >= term {
			leader, term = a.leader, a.term
		}
	}
	if !m.warm {
		m.warm = healthy == len(m.endpoints) || m.warmup >= maxWarmupSamples
		if !m.warm {
			m.warmup++
		}
	}
	if m.warm && (m.samples == 0 || healthy < m.minHealthy) {
		m.minHealthy, m.worstAt, m.worstWhy = healthy, began, why
	}
	if m.warm {
		m.samples++
		if electing {
			m.electing++
		}
	}
	if leader != 0 && term >= m.term {
		if m.leader != 0 && leader != m.leader {
			m.changes++
		}
		m.leader, m.term = leader, term
	}
}

// noAnswer begins the reason of a member that did not answer in time.
const noAnswer = "no answer"

// health returns "" when GET <endpoint>/health answers 200 (etcd's own
// health: a leader, no alarm, a read served), else why not: the status
// code, the error, or noAnswer within patience.
func (m *monitor) health(ctx context.Context, endpoint string, patience time.Duration) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/health", nil)
	if err != nil {
		return err.Error()
	}
	resp, err := m.http.Do(req)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("%s within %s", noAnswer, patience)
	case err != nil:
		// Without the method and URL: "dial tcp 10.241.0.7:2379: connect:
		// connection refused".
		if uerr := (*url.Error)(nil); errors.As(err, &uerr) {
			return uerr.Err.Error()
		}
		return err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode == http.StatusOK {
		return ""
	}
	// etcd says why in the body: {"health":"false","reason":"RAFT NO
	// LEADER"}, or "RANGE ERROR:etcdserver: leader changed" when the read
	// it tries is cut by a change of leader.
	var h struct {
		Reason string `json:"reason"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&h); err == nil && h.Reason != "" {
		return resp.Status + " " + h.Reason
	}
	return resp.Status
}

// memberName is the pod name in an endpoint URL
// (http://<pod>.<service>...:2379), or the URL's host.
func memberName(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return endpoint
	}
	name, _, _ := strings.Cut(u.Hostname(), ".")
	return name
}

// facts returns the leader changes, the fewest healthy members in one
// sample (0 before the first) and the number of samples.
func (m *monitor) facts() (leaderChanges, minHealthy, samples int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changes, m.minHealthy, m.samples
}

// electingSamples returns the number of samples in which a member was up
// without a leader, counted healthy within electionGrace.
func (m *monitor) electingSamples() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.electing
}

// worst returns when the sample with the fewest healthy members began and
// why each of its unhealthy members was not healthy; a zero time before
// the first sample.
func (m *monitor) worst() (time.Time, []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.worstAt, m.worstWhy
}
