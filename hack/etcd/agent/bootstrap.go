package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/util/wait"
)

// startPlan says how etcd must start: decided from the data dir and, when
// the data dir holds no member, from the running cluster's member list.
type startPlan struct {
	// reason says why, for the log.
	reason string
	// existing: start with --initial-cluster-state=existing (and, unless
	// the data dir holds a member, an --initial-cluster naming the running
	// cluster's members).
	existing bool
	// remove is the ID of a member to remove before starting: this pod's
	// earlier incarnation, whose data is gone. 0 for none.
	remove uint64
	// add: add this member (its peer URLs) to the cluster before starting.
	add bool
}

// planStart decides how etcd starts. hasWAL says whether the data dir holds
// a member (its WAL); cluster is the running cluster's member list, nil when
// no cluster answered (or none was asked). The rules are the ones etcd's
// own runtime-reconfiguration guide gives, for a pod that keeps its name:
//
//   - a WAL: a restart. etcd takes the member ID and the membership from the
//     WAL and ignores --initial-cluster*, so the member rejoins with the same
//     ID; "existing" only says so.
//   - no WAL, no cluster: the cluster is being created; start as given
//     (--initial-cluster-state=new with the static --initial-cluster).
//   - no WAL, a cluster that lists this member's peer URLs as never started
//     (no client URLs published): it was added (by an earlier attempt of
//     this agent: no name yet) or named in the cluster's static bootstrap
//     (--initial-cluster gives every member its name before it runs: the
//     others formed a quorum without it) and never ran; join it as
//     "existing".
//   - no WAL, a cluster in which this member (same name and peer URLs) has
//     run, which it shows by the client URLs every member publishes when
//     it starts: its data is gone. Bootstrapping "new" again would reuse
//     its ID with an empty log, which breaks Raft (a lost vote, a commit
//     index beyond the log); remove it and add it again under a new ID.
//   - no WAL, a cluster without this member: add it (a scale up).
//
// It fails when the cluster holds this name with other peer URLs, or these
// peer URLs under another name: a configuration only a person can sort out.
func planStart(hasWAL bool, cluster []*pb.Member, m member) (startPlan, error) {
	if hasWAL {
		return startPlan{reason: "the data dir holds a member: restarting it", existing: true}, nil
	}
	if cluster == nil {
		return startPlan{reason: "empty data dir and no running cluster: starting as given"}, nil
	}
	for _, c := range cluster {
		samePeers := sameURLs(c.PeerURLs, m.peerURLs)
		started := len(c.ClientURLs) > 0
		switch {
		case samePeers && !started && (c.Name == "" || c.Name == m.name):
			return startPlan{reason: "empty data dir, member in the cluster but never started: joining", existing: true}, nil
		case samePeers && c.Name == m.name:
			return startPlan{reason: "empty data dir, member has run before: its data is gone, replacing it", existing: true, remove: c.ID, add: true}, nil
		case samePeers:
			return startPlan{}, fmt.Errorf("peer URLs %v belong to member %q (%x), not %q", m.peerURLs, c.Name, c.ID, m.name)
		case c.Name == m.name:
			return startPlan{}, fmt.Errorf("member %q (%x) has peer URLs %v, not %v", c.Name, c.ID, c.PeerURLs, m.peerURLs)
		}
	}
	return startPlan{reason: "empty data dir, member not in the cluster: adding it", existing: true, add: true}, nil
}

// sameURLs says whether a and b hold the same URLs, in any order.
func sameURLs(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// initialCluster renders members as etcd's --initial-cluster
// (name=peerURL,...). A member that never started has no name yet: it gets
// m's name when its peer URLs are m's, or else "unstarted-<id>" (etcd
// matches an existing cluster's members by peer URL, not by name, but the
// names must be unique).
func initialCluster(members []*pb.Member, m member) string {
	var parts []string
	for _, c := range members {
		name := c.Name
		switch {
		case sameURLs(c.PeerURLs, m.peerURLs):
			name = m.name
		case name == "":
			name = fmt.Sprintf("unstarted-%x", c.ID)
		}
		for _, u := range c.PeerURLs {
			parts = append(parts, name+"="+u)
		}
	}
	return strings.Join(parts, ",")
}

// hasWAL says whether dir holds a WAL file, the test etcd itself uses
// (wal.Exist) to choose between restarting a member and bootstrapping one.
func hasWAL(dir string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "*.wal"))
	return len(files) > 0
}

// bootstrap returns etcd's arguments for this start: args as given, or with
// --initial-cluster-state and --initial-cluster rewritten by planStart's
// plan, after removing and adding the member it names. endpoints are the
// cluster's client URLs, asked (for at most timeout) only when the data dir
// holds no member; with none, an empty data dir always starts as given.
// Errors come from planStart and from the cluster's MemberRemove and
// MemberAdd.
func bootstrap(ctx context.Context, log *slog.Logger, args []string, m member, endpoints []string, timeout time.Duration) ([]string, error) {
	wal := hasWAL(m.walDir)
	var cli *clientv3.Client
	var cluster []*pb.Member
	if !wal && len(endpoints) > 0 {
		var err error
		cli, err = clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: timeout, Logger: zap.NewNop()})
		if err != nil {
			return nil, fmt.Errorf("etcd client for %v: %w", endpoints, err)
		}
		defer func() { _ = cli.Close() }()
		// A linearizable member list: only a cluster with a quorum answers,
		// so a member's view of a cluster that is still forming never counts.
		lctx, cancel := context.WithTimeout(ctx, timeout)
		resp, err := cli.MemberList(lctx)
		cancel()
		if err != nil {
			log.Info("No running cluster answered", "endpoints", endpoints, "error", err)
		} else {
			cluster = resp.Members
		}
	}
	plan, err := planStart(wal, cluster, m)
	if err != nil {
		return nil, err
	}
	log.Info("Starting etcd", "member", m.name, "plan", plan.reason)
	if plan.remove != 0 {
		if _, err := cli.MemberRemove(ctx, plan.remove); err != nil {
			return nil, fmt.Errorf("remove member %x: %w", plan.remove, err)
		}
		log.Info("Removed the member's earlier incarnation", "id", fmt.Sprintf("%x", plan.remove))
	}
	if plan.add {
		resp, err := addMember(ctx, cli, m.peerURLs)
		if err != nil {
			return nil, fmt.Errorf("add member %v: %w", m.peerURLs, err)
		}
		cluster = resp.Members
		log.Info("Added the member", "id", fmt.Sprintf("%x", resp.Member.ID))
	}
	if !plan.existing {
		return args, nil
	}
	args = withEtcdFlag(args, flagInitialClusterState, "existing")
	if cluster != nil {
		args = withEtcdFlag(args, flagInitialCluster, initialCluster(cluster, m))
	}
	return args, nil
}

// addTimeout bounds addMember's retries.
const addTimeout = 30 * time.Second

// addMember adds a voter with peerURLs. etcd refuses a voter while its
// members have not all been connected for 5 s (its strict reconfiguration
// check: a member just removed, or just restarted, still counts), so
// addMember retries those refusals, every second for at most addTimeout;
// any other error ends it.
func addMember(ctx context.Context, cli *clientv3.Client, peerURLs []string) (*clientv3.MemberAddResponse, error) {
	var resp *clientv3.MemberAddResponse
	var err error
	perr := wait.PollUntilContextTimeout(ctx, time.Second, addTimeout, true, func(ctx context.Context) (bool, error) {
		resp, err = cli.MemberAdd(ctx, peerURLs)
		if errors.Is(err, rpctypes.ErrUnhealthy) || errors.Is(err, rpctypes.ErrMemberNotEnoughStarted) {
			return false, nil
		}
		return true, err
	})
	if err == nil && perr != nil {
		err = perr
	}
	return resp, err
}
