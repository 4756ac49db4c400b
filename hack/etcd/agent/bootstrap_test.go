package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

func TestParseMember(t *testing.T) {
	m, err := parseMember([]string{
		"--name=etcd-etcd-1", "-data-dir=/var/lib/etcd", "--listen-client-urls=http://0.0.0.0:2379,http://[::]:2379",
		"--initial-advertise-peer-urls=http://etcd-etcd-1.etcd-etcd.ns.svc.cluster.local:2380",
	})
	require.NoError(t, err)
	assert.Equal(t, member{
		name:      "etcd-etcd-1",
		dataDir:   "/var/lib/etcd",
		walDir:    "/var/lib/etcd/member/wal",
		peerURLs:  []string{"http://etcd-etcd-1.etcd-etcd.ns.svc.cluster.local:2380"},
		clientURL: "http://127.0.0.1:2379",
	}, m)

	m, err = parseMember([]string{"--name=a", "--data-dir=/d", "--wal-dir=/w", "--listen-client-urls=http://10.0.0.1:2379"})
	require.NoError(t, err)
	assert.Equal(t, "/w", m.walDir)
	assert.Equal(t, "http://10.0.0.1:2379", m.clientURL)
	assert.Equal(t, []string{"http://localhost:2380"}, m.peerURLs, "etcd's default")

	for name, args := range map[string][]string{
		"no name":        {"--data-dir=/d"},
		"no data dir":    {"--name=a"},
		"two-arg form":   {"--name", "a", "--data-dir=/d"},
		"two-arg wal":    {"--name=a", "--data-dir=/d", "--wal-dir", "/w"},
		"bad client URL": {"--name=a", "--data-dir=/d", "--listen-client-urls=http://[::1"},
	} {
		_, err := parseMember(args)
		assert.Error(t, err, name)
	}
}

func TestWithEtcdFlag(t *testing.T) {
	args := []string{"--name=a", "--initial-cluster-state=new", "-initial-cluster-state=new", "--initial-cluster-token=x"}
	assert.Equal(t, []string{"--name=a", "--initial-cluster-token=x", "--initial-cluster-state=existing"},
		withEtcdFlag(args, flagInitialClusterState, "existing"))
	assert.Equal(t, "new", etcdFlag(args, flagInitialClusterState))
	assert.Equal(t, "", etcdFlag(args, "data-dir"))
}

func TestPlanStart(t *testing.T) {
	self := member{name: "e1", peerURLs: []string{"http://e1:2380"}}
	// running is a member that has started: it published its name and
	// client URLs.
	running := func(name, peer string, id uint64) *pb.Member {
		return &pb.Member{ID: id, Name: name, PeerURLs: []string{peer}, ClientURLs: []string{"http://" + name + ":2379"}}
	}
	// unstarted is a member that never ran: added at runtime (no name) or
	// named by the cluster's static bootstrap (--initial-cluster).
	unstarted := func(name, peer string, id uint64) *pb.Member {
		return &pb.Member{ID: id, Name: name, PeerURLs: []string{peer}}
	}
	others := []*pb.Member{running("e0", "http://e0:2380", 0xa), running("e2", "http://e2:2380", 0xc)}
	tests := []struct {
		name    string
		wal     bool
		cluster []*pb.Member
		want    startPlan
		wantErr bool
	}{{
		name: "restart: the WAL decides, the cluster is not asked",
		wal:  true,
		want: startPlan{existing: true},
	}, {
		name:    "restart even if the cluster lists the member as never started",
		wal:     true,
		cluster: append(others, unstarted("", "http://e1:2380", 0xb)),
		want:    startPlan{existing: true},
	}, {
		name: "first boot, no cluster: as given",
		want: startPlan{},
	}, {
		name:    "added, never started: join",
		cluster: append(others, unstarted("", "http://e1:2380", 0xb)),
		want:    startPlan{existing: true},
	}, {
		// The others formed a quorum before this member first started:
		// the cluster knows its name from --initial-cluster, not from it.
		name:    "named by the static bootstrap, never started: join",
		cluster: append(others, unstarted("e1", "http://e1:2380", 0xb)),
		want:    startPlan{existing: true},
	}, {
		name:    "ran before, data gone: replace",
		cluster: append(others, running("e1", "http://e1:2380", 0xb)),
		want:    startPlan{existing: true, remove: 0xb, add: true},
	}, {
		name:    "not a member: add",
		cluster: others,
		want:    startPlan{existing: true, add: true},
	}, {
		name:    "peer URLs held by another name",
		cluster: append(others, running("e9", "http://e1:2380", 0xb)),
		wantErr: true,
	}, {
		name:    "peer URLs held by another name that never started",
		cluster: append(others, unstarted("e9", "http://e1:2380", 0xb)),
		wantErr: true,
	}, {
		name:    "name held with other peer URLs",
		cluster: append(others, running("e1", "http://e9:2380", 0xb)),
		wantErr: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := planStart(tt.wal, tt.cluster, self)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			got.reason = ""
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestInitialCluster(t *testing.T) {
	self := member{name: "e1", peerURLs: []string{"http://e1:2380"}}
	got := initialCluster([]*pb.Member{
		{ID: 0xa, Name: "e0", PeerURLs: []string{"http://e0:2380"}},
		{ID: 0xb, PeerURLs: []string{"http://e1:2380"}},
		{ID: 0xc, PeerURLs: []string{"http://e2:2380"}},
	}, self)
	assert.Equal(t, "e0=http://e0:2380,e1=http://e1:2380,unstarted-c=http://e2:2380", got)
}

func TestHasWAL(t *testing.T) {
	dir := t.TempDir()
	assert.False(t, hasWAL(filepath.Join(dir, "missing")))
	assert.False(t, hasWAL(dir))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "0000000000000000-0000000000000000.wal"), nil, 0o600))
	assert.True(t, hasWAL(dir))
}
