package etcdcheck

import (
	"context"
	"net/http"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// sampleTimeout bounds one member's status and health in one sample. A
// member that takes longer counts as unhealthy in that sample.
const sampleTimeout = time.Second

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
}

// newMonitor makes a monitor of endpoints, with a client for each. Close
// it.
func newMonitor(endpoints []string) (*monitor, error) {
	m := &monitor{http: &http.Client{}, endpoints: endpoints}
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
		healthy      bool
		leader, term uint64
	}
	answers := make([]answer, len(m.endpoints))
	var wg sync.WaitGroup
	for i, ep := range m.endpoints {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, sampleTimeout)
			defer cancel()
			answers[i].healthy = m.healthy(ctx, ep)
			// Not clientv3's Status, which waits for a connection to be
			// ready: a member that is down would hold up every sample.
			mc := pb.NewMaintenanceClient(m.clients[i].ActiveConnection())
			if st, err := mc.Status(ctx, &pb.StatusRequest{}, grpc.WaitForReady(false)); err == nil {
				answers[i].leader, answers[i].term = st.Leader, st.RaftTerm
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	healthy := 0
	var leader, term uint64
	for _, a := range answers {
		if a.healthy {
			healthy++
		}
		// The leader of the highest term wins: a member cut off from the
		// others may still name an old one.
		if a.leader != 0 && a.term >= term {
			leader, term = a.leader, a.term
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.warm {
		m.warm = healthy == len(m.endpoints) || m.warmup >= maxWarmupSamples
		if !m.warm {
			m.warmup++
		}
	}
	if m.warm && (m.samples == 0 || healthy < m.minHealthy) {
		m.minHealthy = healthy
	}
	if m.warm {
		m.samples++
	}
	if leader != 0 && term >= m.term {
		if m.leader != 0 && leader != m.leader {
			m.changes++
		}
		m.leader, m.term = leader, term
	}
}

// healthy says whether GET <endpoint>/health answers 200: etcd's own
// health (a leader, no alarm, a read served).
func (m *monitor) healthy(ctx context.Context, endpoint string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/health", nil)
	if err != nil {
		return false
	}
	resp, err := m.http.Do(req)
	if err != nil {
		return false
	}
	defer func() { _ = resp.Body.Close() }() // only the status code is read
	return resp.StatusCode == http.StatusOK
}

// facts returns the leader changes, the fewest healthy members in one
// sample (0 before the first) and the number of samples.
func (m *monitor) facts() (leaderChanges, minHealthy, samples int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changes, m.minHealthy, m.samples
}
