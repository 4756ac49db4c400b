// Package etcdtest runs real etcd clusters on 127.0.0.1 for tests, each
// member started through fedop's etcd agent with the flags the agent's
// doc gives for a pod (hack/etcd/agent), from the etcd versions pinned under
// hack/etcd/v*/. The tests that use it carry the build tag etcd.
//
// It must not be imported by non-test code, and it never listens on
// anything but 127.0.0.1.
package etcdtest
