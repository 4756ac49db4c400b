//go:build etcd

package etcdcheck

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/fedop-io/fedop/hack/etcd/etcdtest"
)

// TestRunThroughFaultsAndUpgrade runs the checker against three real etcd
// members on 127.0.0.1 (go test -tags etcd ./e2e/etcdcheck/...) while they
// are upgraded to the newer etcd one at a time, as fedop rolls pods, and
// then while the leader is killed and restarted. No acknowledged write may
// be lost and the history must be linearizable.
func TestRunThroughFaultsAndUpgrade(t *testing.T) {
	versions := etcdtest.Versions(etcdtest.Build(t))
	oldest, newest := versions[0], versions[len(versions)-1]
	cl := etcdtest.Start(t, 3, oldest)
	cli := cl.Client()
	c, err := New(Config{
		Endpoints: cl.Endpoints(), Prefix: "k/", Writers: 4, Readers: 2, Pause: 5 * time.Millisecond,
		OpTimeout: 2 * time.Second, SampleInterval: 200 * time.Millisecond,
		ReadBackTimeout: time.Minute, CheckTimeout: time.Minute,
		VisualizePath: t.TempDir() + "/history.html",
		Log:           slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	require.NoError(t, err)
	defer c.Close()

	ctx, stop := context.WithCancel(context.Background())
	type result struct {
		r   Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := c.Run(ctx)
		done <- result{r, err}
	}()
	// writes reports whether the checker has acknowledged at least n more
	// writes than it had when it was made.
	writes := func(n int64) func(context.Context) (bool, error) {
		from := c.Progress().AcknowledgedWrites
		return func(context.Context) (bool, error) { return c.Progress().AcknowledgedWrites >= from+n, nil }
	}
	waitFor := func(what string, cond func(context.Context) (bool, error)) {
		t.Helper()
		require.NoError(t, wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, time.Minute, true, cond), what)
	}
	waitFor("writes before the upgrade", writes(300))

	// A rolling upgrade to the newer etcd, as fedop does it: one member at
	// a time, drained (leadership moved away), stopped (SIGTERM), started
	// on its data dir, healthy again.
	for i := range cl.Members {
		code, body := etcdtest.Get(context.Background(), cl.Members[i].HookURL+"/drain")
		require.Equal(t, http.StatusOK, code, body)
		cl.StopMember(i)
		waitFor("writes while a member is down", writes(200))
		cl.StartMember(i, newest)
		cl.WaitHealthy(i)
		waitFor("writes after a member's restart", writes(200))
	}
	rolled := c.Progress()
	t.Logf("after the rolling upgrade: %+v", rolled)

	// Then the leader crashes (SIGKILL) and comes back.
	leader := -1
	for i, m := range cl.Members {
		st, err := cli.Status(context.Background(), m.ClientURL)
		require.NoError(t, err)
		if st.Leader == st.Header.MemberId {
			leader = i
		}
	}
	require.NotEqual(t, -1, leader)
	cl.KillMember(leader)
	waitFor("writes without the old leader", writes(300))
	cl.StartMember(leader, newest)
	cl.WaitHealthy(leader)
	waitFor("writes after the leader's restart", writes(300))
	stop()
	res := <-done
	require.NoError(t, res.err)
	r := res.r
	t.Log(r.Summary())

	assert.True(t, r.OK)
	assert.Zero(t, r.LostWrites)
	assert.Equal(t, porcupine.Ok, r.Linearizability)
	assert.Greater(t, r.AcknowledgedWrites, 1500)
	assert.Greater(t, r.Reads, 0)
	assert.GreaterOrEqual(t, r.LeaderChanges, rolled.LeaderChanges+1, "the leader was killed")
	assert.GreaterOrEqual(t, rolled.LeaderChanges, 1, "the upgrade moved the leader")
	assert.Equal(t, 2, rolled.MinHealthyMembers, "one member down at a time, and no election")
	assert.LessOrEqual(t, r.MinHealthyMembers, 2)
	assert.Greater(t, r.HealthSamples, 10)
	assert.Equal(t, r.MembersStart, r.MembersEnd, "restarts keep member IDs")
	assert.Len(t, r.MembersEnd, 3)
}
