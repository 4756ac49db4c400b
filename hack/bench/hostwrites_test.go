package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

func TestFCWriteTimesKeepsStoredWritesOfTheFederationCluster(t *testing.T) {
	base := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	event := func(at time.Duration, stage auditv1.Stage, verb, name, sub string, code int32) auditv1.Event {
		return auditv1.Event{
			Stage: stage, Verb: verb,
			ObjectRef:      &auditv1.ObjectReference{APIGroup: "fedop.io", Resource: "federationclusters", Subresource: sub, Namespace: namespace, Name: name},
			ResponseStatus: &metav1.Status{Code: code},
			StageTimestamp: metav1.NewMicroTime(base.Add(at)),
		}
	}
	events := []auditv1.Event{
		event(1*time.Millisecond, auditv1.StageResponseComplete, "update", "step", "status", 200),                    // kept
		event(2*time.Millisecond, auditv1.StageResponseComplete, "get", "step", "", 200),                             // a read
		event(3*time.Millisecond, auditv1.StageResponseComplete, "update", "step", "status", 409),                    // a conflict: nothing stored
		event(4*time.Millisecond, auditv1.StageResponseComplete, "patch", "other", "", 200),                          // another FederationCluster
		event(5*time.Millisecond, auditv1.StageRequestReceived, "update", "step", "", 0),                             // not yet stored
		event(6*time.Millisecond, auditv1.StageResponseComplete, "patch", "step", "", 200),                           // kept: a spec write
		event(7*time.Microsecond+7*time.Millisecond, auditv1.StageResponseComplete, "update", "step", "status", 200), // kept, to the microsecond
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	f, err := os.Create(path)
	require.NoError(t, err)
	enc := json.NewEncoder(f)
	for _, ev := range events {
		require.NoError(t, enc.Encode(ev))
	}
	require.NoError(t, f.Close())

	got, err := fcWriteTimes(path, "step")
	require.NoError(t, err)
	want := []time.Time{base.Add(time.Millisecond), base.Add(6 * time.Millisecond), base.Add(7*time.Millisecond + 7*time.Microsecond)}
	require.Len(t, got, len(want))
	for i := range want {
		assert.True(t, want[i].Equal(got[i]), "write %d: got %s, want %s", i, got[i], want[i])
	}
}

func TestFCWriteTimesRejectsWhatIsNotAnAuditLog(t *testing.T) {
	dir := t.TempDir()
	_, err := fcWriteTimes(filepath.Join(dir, "missing.log"), "step")
	assert.ErrorContains(t, err, "reading the host's audit log")

	bad := filepath.Join(dir, "bad.log")
	require.NoError(t, os.WriteFile(bad, []byte("{\"stage\":\"ResponseComplete\"}\nnot json\n"), 0o600))
	_, err = fcWriteTimes(bad, "step")
	assert.ErrorContains(t, err, "line 2")
}
