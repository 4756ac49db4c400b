//go:build etcd

package main

import (
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fedop-io/fedop/hack/etcd/etcdtest"
)

// These tests run three real etcd members on 127.0.0.1, each through the
// agent binary: go test -tags etcd ./hack/etcd/...

// leaderIndex returns the index of the member every running member names
// as leader, failing the test if they disagree or no member leads.
func leaderIndex(t *testing.T, c *etcdtest.Cluster, cli *clientv3.Client) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var leader uint64
	ids := map[uint64]int{}
	for i, m := range c.Members {
		st, err := cli.Status(ctx, m.ClientURL)
		require.NoError(t, err)
		ids[st.Header.MemberId] = i
		if leader == 0 {
			leader = st.Leader
		}
		require.Equal(t, leader, st.Leader, "members disagree on the leader")
	}
	i, ok := ids[leader]
	require.True(t, ok, "leader %x is not a member", leader)
	return i
}

func TestDrainMovesLeadership(t *testing.T) {
	_, newest := versions(t)
	c := etcdtest.Start(t, 3, newest)
	cli := c.Client()
	ctx := context.Background()
	leader := leaderIndex(t, c, cli)
	follower := (leader + 1) % 3

	code, body := etcdtest.Get(ctx, c.Members[follower].HookURL+"/drain")
	assert.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "is not the leader")
	assert.Equal(t, leader, leaderIndex(t, c, cli), "draining a follower moved the leader")

	start := time.Now()
	code, body = etcdtest.Get(ctx, c.Members[leader].HookURL+"/drain")
	require.Equal(t, http.StatusOK, code, body)
	t.Logf("drain of the leader took %v: %s", time.Since(start), body)
	assert.NotEqual(t, leader, leaderIndex(t, c, cli), "the drained member still leads")

	code, _ = etcdtest.Get(ctx, c.Members[leader].HookURL+"/drain")
	assert.Equal(t, http.StatusOK, code, "a drained member drains again at once")
	code, _ = etcdtest.Get(ctx, c.Members[leader].HookURL+"/undrain")
	assert.Equal(t, http.StatusOK, code)
	code, body = etcdtest.Get(ctx, c.Members[leader].HookURL+"/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"health":"true"`)
}

// TestRestartKeepsMemberID restarts members on their data dirs, one after
// a graceful stop and one after SIGKILL, each with the newest etcd (a
// patch upgrade), and checks that each comes back as the same member.
func TestRestartKeepsMemberID(t *testing.T) {
	oldest, newest := versions(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, cli, before := startWithData(t, ctx, oldest)

	// etcd stops gracefully on the SIGTERM the agent forwards, then re-raises
	// it, so the agent exits with 128+15, as a shell would report it.
	assert.Equal(t, 143, c.StopMember(1))
	c.StartMember(1, newest)
	c.WaitHealthy(1)
	c.KillMember(2)
	c.StartMember(2, newest)
	c.WaitHealthy(2)

	assert.Equal(t, before, memberIDs(t, ctx, cli))
	for _, i := range []int{1, 2} {
		st, err := cli.Status(ctx, c.Members[i].ClientURL)
		require.NoError(t, err)
		assert.Equal(t, before[c.Members[i].Name], st.Header.MemberId, c.Members[i].Name)
		assert.Equal(t, newest, "v"+st.Version, c.Members[i].Name)
	}
	resp, err := cli.Get(ctx, "before")
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
}

// TestEmptyDataDirReplacesMember restarts a member whose data dir is gone:
// the agent removes its earlier incarnation and adds it again, so it
// comes back under a new ID with the cluster's data.
func TestEmptyDataDirReplacesMember(t *testing.T) {
	_, newest := versions(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, cli, before := startWithData(t, ctx, newest)

	c.StopMember(2)
	require.NoError(t, os.RemoveAll(c.Members[2].DataDir))
	c.StartMember(2, newest)
	c.WaitHealthy(2)

	after := memberIDs(t, ctx, cli)
	assert.Len(t, after, 3)
	assert.Equal(t, before["m0"], after["m0"])
	assert.Equal(t, before["m1"], after["m1"])
	assert.NotEqual(t, before["m2"], after["m2"], "a member whose data is gone must not come back under its old ID")

	only, err := clientv3.New(clientv3.Config{Endpoints: []string{c.Members[2].ClientURL}})
	require.NoError(t, err)
	defer only.Close()
	resp, err := only.Get(ctx, "before", clientv3.WithSerializable())
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1, "the replaced member has the cluster's data")
}

// TestLateFirstStartJoins starts one member only after the two others have
// formed a quorum without it, as a pod scheduled late does when a cluster
// is created: the cluster names it (from --initial-cluster) although it
// never ran. The agent must join it under the ID the cluster gave it, not
// take it for a member whose data is gone.
func TestLateFirstStartJoins(t *testing.T) {
	_, newest := versions(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := etcdtest.New(t, 3, newest)
	c.StartMember(0, newest)
	c.StartMember(1, newest)
	c.WaitHealthy(0)
	c.WaitHealthy(1)
	cli := c.Client()
	before := memberIDs(t, ctx, cli)
	require.Contains(t, before, "m2", "the cluster names the member that never ran")

	c.StartMember(2, newest)
	c.WaitHealthy(2)
	after := memberIDs(t, ctx, cli)
	assert.Equal(t, before, after, "every member keeps the ID of the cluster's bootstrap")
}

// versions returns the oldest and the newest pinned etcd versions.
func versions(t *testing.T) (oldest, newest string) {
	vs := etcdtest.Versions(etcdtest.Build(t))
	return vs[0], vs[len(vs)-1]
}

// startWithData starts three members of etcd version, puts the key
// "before", and returns the cluster, a client of it and its member IDs by
// name.
func startWithData(t *testing.T, ctx context.Context, version string) (*etcdtest.Cluster, *clientv3.Client, map[string]uint64) {
	c := etcdtest.Start(t, 3, version)
	cli := c.Client()
	_, err := cli.Put(ctx, "before", "data")
	require.NoError(t, err)
	return c, cli, memberIDs(t, ctx, cli)
}

// memberIDs returns the cluster's member IDs by name.
func memberIDs(t *testing.T, ctx context.Context, cli *clientv3.Client) map[string]uint64 {
	t.Helper()
	resp, err := cli.MemberList(ctx)
	require.NoError(t, err)
	ids := map[string]uint64{}
	for _, m := range resp.Members {
		ids[m.Name] = m.ID
	}
	return ids
}
