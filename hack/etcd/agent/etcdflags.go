package main

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
)

// member is what the agent needs to know about the etcd member it runs, read
// from etcd's own command line.
type member struct {
	// name is --name: the pod's name, stable across restarts.
	name string
	// dataDir is --data-dir.
	dataDir string
	// walDir is --wal-dir, or else <data-dir>/member/wal, etcd's default:
	// where a member that has started keeps its WAL.
	walDir string
	// peerURLs is --initial-advertise-peer-urls: how the other members
	// reach this one, and how the agent finds this member in a member list.
	peerURLs []string
	// clientURL is this member's client endpoint as the agent reaches it:
	// the first --listen-client-urls URL with a wildcard host replaced by
	// 127.0.0.1.
	clientURL string
}

// Flags the agent reads. etcd's defaults apply when one is absent, except
// for --name and --data-dir, which a pod must set.
const (
	flagName                = "name"
	flagDataDir             = "data-dir"
	flagWALDir              = "wal-dir"
	flagPeerURLs            = "initial-advertise-peer-urls"
	flagListenClientURLs    = "listen-client-urls"
	flagInitialCluster      = "initial-cluster"
	flagInitialClusterState = "initial-cluster-state"
)

// parseMember reads the member from etcd's arguments. It accepts flags in
// the --flag=value (or -flag=value) form only, and fails when a flag it
// reads is given as two arguments, or when --name or --data-dir is missing,
// so that the agent never acts on a member it misread.
func parseMember(args []string) (member, error) {
	for _, a := range args {
		switch strings.TrimLeft(a, "-") {
		case flagName, flagDataDir, flagWALDir, flagPeerURLs, flagListenClientURLs, flagInitialCluster, flagInitialClusterState:
			return member{}, fmt.Errorf("etcd flag %s: write it as %s=VALUE, the agent reads that form only", a, a)
		}
	}
	m := member{name: etcdFlag(args, flagName), dataDir: etcdFlag(args, flagDataDir)}
	if m.name == "" || m.dataDir == "" {
		return member{}, fmt.Errorf("etcd flags --%s and --%s are required", flagName, flagDataDir)
	}
	m.walDir = etcdFlag(args, flagWALDir)
	if m.walDir == "" {
		m.walDir = filepath.Join(m.dataDir, "member", "wal")
	}
	peers := etcdFlag(args, flagPeerURLs)
	if peers == "" {
		peers = "http://localhost:2380" // etcd's default
	}
	m.peerURLs = strings.Split(peers, ",")
	listen := etcdFlag(args, flagListenClientURLs)
	if listen == "" {
		listen = "http://localhost:2379" // etcd's default
	}
	u, err := url.Parse(strings.Split(listen, ",")[0])
	if err != nil {
		return member{}, fmt.Errorf("etcd flag --%s: %w", flagListenClientURLs, err)
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() == "" || (ip != nil && ip.IsUnspecified()) {
		u.Host = net.JoinHostPort("127.0.0.1", u.Port())
	}
	m.clientURL = u.String()
	return m, nil
}

// etcdFlag returns the value of the last --name=value or -name=value in args
// (the last one wins, as in Go's flag package, which etcd uses), or "".
func etcdFlag(args []string, name string) string {
	value := ""
	for _, a := range args {
		if v, ok := cutFlag(a, name); ok {
			value = v
		}
	}
	return value
}

// withEtcdFlag returns a copy of args without any name flag, and with
// --name=value at the end.
func withEtcdFlag(args []string, name, value string) []string {
	out := make([]string, 0, len(args)+1)
	for _, a := range args {
		if _, ok := cutFlag(a, name); !ok {
			out = append(out, a)
		}
	}
	return append(out, "--"+name+"="+value)
}

// cutFlag returns the value of arg when it is flag name in the =VALUE form.
func cutFlag(arg, name string) (string, bool) {
	for _, prefix := range []string{"--", "-"} {
		if v, ok := strings.CutPrefix(arg, prefix+name+"="); ok {
			return v, true
		}
	}
	return "", false
}
