// Command etcd-agent is PID 1 of fedop's etcd image (fedop.local/etcd:<version>,
// built by hack/etcd/build.sh). It starts etcd as its child with the flags
// after "--", forwards SIGTERM and SIGINT to it (etcd hands leadership over
// when it stops gracefully), exits with etcd's exit code, and serves fedop's
// pod hooks over HTTP (default :8080):
//
//   - GET /drain: 200 when the local member is not the leader, after moving
//     leadership to the healthy voter with the highest applied index if it
//     was; 503 with the reason otherwise. Poll it until 200.
//   - GET /undrain: 200; nothing to undo.
//   - GET /healthz: the local member's own GET /health, relayed (200 when it
//     has a leader, no alarm and serves a read).
//
// Before it starts etcd it decides how, as a StatefulSet-style etcd must
// (see planStart): a data dir that holds a WAL is a restart of the same
// member with the same ID, never a re-add; an empty data dir joins the
// running cluster found at --cluster-endpoints, replacing its own earlier
// incarnation if that one has run (its data is gone), or bootstraps the
// cluster as given when no cluster answers.
//
// The agent reads etcd's --name, --data-dir, --wal-dir,
// --initial-advertise-peer-urls and --listen-client-urls, which must be
// written in the --flag=value form.
//
// A pod of the FederationCluster "etcd", component "etcd" (pods
// etcd-etcd-0..4, headless Service etcd-etcd in every member cluster) runs
// it as follows; $(POD_NAME) and $(POD_NAMESPACE) come from the downward
// API, and the data dir must outlive the pod for a restart to keep the
// member ID (a hostPath per node with subPathExpr: $(POD_NAME) on kind):
//
//	args:
//	- --cluster-endpoints=http://etcd-etcd-0.etcd-etcd.$(POD_NAMESPACE).svc.cluster.local:2379,...  (every member)
//	- --
//	- --name=$(POD_NAME)
//	- --data-dir=/var/lib/etcd
//	- --listen-client-urls=http://0.0.0.0:2379
//	- --advertise-client-urls=http://$(POD_NAME).etcd-etcd.$(POD_NAMESPACE).svc.cluster.local:2379
//	- --listen-peer-urls=http://0.0.0.0:2380
//	- --initial-advertise-peer-urls=http://$(POD_NAME).etcd-etcd.$(POD_NAMESPACE).svc.cluster.local:2380
//	- --initial-cluster=etcd-etcd-0=http://etcd-etcd-0.etcd-etcd.$(POD_NAMESPACE).svc.cluster.local:2380,...  (every member)
//	- --initial-cluster-state=new
//	- --initial-cluster-token=etcd-etcd
//
// The image's entrypoint already passes --etcd=/usr/local/bin/etcd.
//
// The agent must not decide anything about the rollout: it only answers for
// its own member.
package main
