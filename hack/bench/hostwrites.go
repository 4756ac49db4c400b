package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// Item 9 reads the host's writes to a FederationCluster from the host
// kube-apiserver's audit log, which hack/bench.sh turns on for the host
// only, with a policy that logs every write to a FederationCluster (spec
// or status) and nothing else (write_host_audit_policy). The log gives
// each write its time on the API server: the stageTimestamp of its
// ResponseComplete event, once the write was stored. A watch of the
// FederationCluster, which item 9 used before, stamps a write only when
// its event reaches the watcher, which on a loaded lab can be after
// events of the members that came later; the audit log has no such delay.
// The observer's receive times are on the same machine's clock.

// fcWriteTimes returns the times, on the host's API server, of the
// successful writes (create, update, patch, delete: spec or status; one
// that changed nothing included) to FederationCluster name, in the
// benchmark's namespace, in the audit log at path, in the log's order. It
// errors when the log cannot be read or a line is not an audit event.
func fcWriteTimes(path, name string) ([]time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the host's audit log: %w", err)
	}
	defer func() { _ = f.Close() }() // read only: nothing to lose
	var out []time.Time
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		var ev auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("the host's audit log %s, line %d: %w", path, line, err)
		}
		ref := ev.ObjectRef
		if ev.Stage != auditv1.StageResponseComplete || ref == nil ||
			ref.APIGroup != v1alpha1.GroupVersion.Group || ref.Resource != "federationclusters" ||
			ref.Namespace != namespace || ref.Name != name ||
			!slices.Contains([]string{"create", "update", "patch", "delete"}, ev.Verb) ||
			ev.ResponseStatus == nil || ev.ResponseStatus.Code >= 300 {
			continue
		}
		out = append(out, ev.StageTimestamp.Time)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the host's audit log: %w", err)
	}
	return out, nil
}
