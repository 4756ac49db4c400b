// Package etcdcheck checks an etcd cluster through a scenario (a rolling
// upgrade, faults): that no acknowledged write is lost and that what its
// clients saw is linearizable. It is the verdict on fedop's etcd reference
// workload, and it judges etcd from the outside only: it must not read
// fedop's status, and it must not touch any key outside its prefix.
//
// A run (Checker.Run) lists the members, deletes the keys under its prefix,
// then until its context ends:
//
//   - writers put <prefix><seq> = <seq> (seq from 0, zero-padded to 10
//     digits in the key), each operation timed from just before it is sent
//     to just after its answer, with its outcome: acknowledged, failed
//     (etcd rejected it before Raft saw it) or unknown (a timeout, a lost
//     connection: it may or may not have happened);
//   - readers get one of the 50 latest keys with linearizable reads;
//   - a monitor samples every endpoint every 200 ms: GET /health (etcd's
//     own health, as fedop's postReady hook sees it; at most 1 s) and
//     Status (the leader and its Raft term).
//
// Then it lists the members again, reads every key back with linearizable
// range reads, and checks the whole history, read-back included, with
// porcupine against a key-value model partitioned by key, as etcd's own
// robustness tests do (see model). The Report says how many writes were
// acknowledged and lost (acknowledged, not read back: must be 0), whether
// the history is linearizable, the longest time without an acknowledged
// write, the leader changes, the fewest healthy members in one sample, and
// the member IDs at the start and the end. Note that a leader's crash makes
// every member's /health fail until a new leader is elected (about a
// second), so only a graceful roll (drain first) keeps minHealthyMembers at
// N-1.
//
// The command cmd/etcdcheck runs it once and prints the report as the last
// line of stdout; in a member cluster it runs as a Job (backoffLimit 0,
// restartPolicy Never, terminationGracePeriodSeconds at least
// --read-back-timeout plus --check-timeout) with --endpoints naming the
// members' stable cross-cluster names. A test starts the Job, waits for
// GET /progress (through the API server's pod proxy) to show writes, runs
// its scenario, sends GET /stop the same way (or lets --duration end the
// run), waits for the Job to complete (report OK) or fail (not OK), and
// reads the report from the last line of the pod's log.
package etcdcheck
