package etcdcheck

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/assert"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ms is a time in the made-up histories below.
func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func put(key, value string, call, ret int, o Outcome) Op {
	return Op{Put: true, Key: key, Value: value, Outcome: o, Call: ms(call), Return: ms(ret)}
}

func get(key, value string, call, ret int) Op {
	return Op{Key: key, Value: value, Found: value != "", Outcome: Acknowledged, Call: ms(call), Return: ms(ret)}
}

func TestAnalyze(t *testing.T) {
	tests := []struct {
		name       string
		history    []Op
		readBack   []Op
		want       porcupine.CheckResult
		lost       []string
		illegal    []string
		ack, unk   int
		unkFound   int
		gap, gapAt time.Duration
	}{{
		name:     "every acknowledged write read back",
		history:  []Op{put("k/1", "1", 0, 10, Acknowledged), put("k/2", "2", 12, 20, Acknowledged), get("k/1", "1", 15, 18)},
		readBack: []Op{get("k/1", "1", 100, 110), get("k/2", "2", 100, 110)},
		want:     porcupine.Ok, ack: 2, gap: ms(80), gapAt: ms(20),
	}, {
		name:     "a lost write: acknowledged, then absent",
		history:  []Op{put("k/1", "1", 0, 10, Acknowledged), put("k/2", "2", 12, 20, Acknowledged)},
		readBack: []Op{get("k/1", "1", 100, 110), get("k/2", "", 100, 110)},
		want:     porcupine.Illegal, lost: []string{"k/2"}, illegal: []string{"k/2"}, ack: 2, gap: ms(80), gapAt: ms(20),
	}, {
		name:     "a stale read: absent after the write was acknowledged",
		history:  []Op{put("k/1", "1", 0, 10, Acknowledged), get("k/1", "", 20, 30)},
		readBack: []Op{get("k/1", "1", 100, 110)},
		want:     porcupine.Illegal, illegal: []string{"k/1"}, ack: 1, gap: ms(90), gapAt: ms(10),
	}, {
		name:     "a read concurrent with the write may miss it",
		history:  []Op{put("k/1", "1", 0, 10, Acknowledged), get("k/1", "", 5, 30)},
		readBack: []Op{get("k/1", "1", 100, 110)},
		want:     porcupine.Ok, ack: 1, gap: ms(90), gapAt: ms(10),
	}, {
		name:     "a read that saw a value then lost it",
		history:  []Op{put("k/1", "1", 0, 10, Unknown), get("k/1", "1", 20, 30), get("k/1", "", 40, 50)},
		readBack: []Op{get("k/1", "1", 100, 110)},
		want:     porcupine.Illegal, illegal: []string{"k/1"}, unk: 1, unkFound: 1, gap: ms(100),
	}, {
		name:     "an unknown write that was applied",
		history:  []Op{put("k/1", "1", 0, 10, Unknown), get("k/1", "", 20, 30)},
		readBack: []Op{get("k/1", "1", 100, 110)},
		want:     porcupine.Ok, unk: 1, unkFound: 1, gap: ms(100),
	}, {
		name:     "an unknown write that was not",
		history:  []Op{put("k/1", "1", 0, 10, Unknown), get("k/1", "", 20, 30)},
		readBack: []Op{get("k/1", "", 100, 110)},
		want:     porcupine.Ok, unk: 1, gap: ms(100),
	}, {
		name:     "a failed write that was not applied",
		history:  []Op{put("k/1", "1", 0, 10, Failed)},
		readBack: []Op{get("k/1", "", 100, 110)},
		want:     porcupine.Ok, gap: ms(100),
	}, {
		name:     "a failed write that was applied after all",
		history:  []Op{put("k/1", "1", 0, 10, Failed)},
		readBack: []Op{get("k/1", "1", 100, 110)},
		want:     porcupine.Illegal, illegal: []string{"k/1"}, gap: ms(100),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := Analyze(tt.history, tt.readBack, ms(100), time.Minute)
			assert.Equal(t, tt.want, r.Linearizability)
			assert.Equal(t, len(tt.lost), r.LostWrites)
			assert.Equal(t, tt.lost, r.LostKeys)
			assert.Equal(t, tt.ack, r.AcknowledgedWrites)
			assert.Equal(t, tt.unk, r.UnknownWrites)
			assert.Equal(t, tt.unkFound, r.UnknownWritesApplied)
			assert.Equal(t, tt.gap.Seconds(), r.MaxWriteGapSeconds)
			assert.Equal(t, tt.gapAt.Seconds(), r.MaxWriteGapStartSeconds)
			assert.Equal(t, tt.illegal, r.IllegalKeys)
		})
	}
}

func TestAnalyzeManyKeys(t *testing.T) {
	// Keys are independent: 10000 keys with concurrent reads check quickly,
	// and one stale read among them is found and named.
	var history, readBack []Op
	for i := range 10000 {
		k, v := fmt.Sprintf("k/%010d", i), fmt.Sprint(i)
		history = append(history, put(k, v, i, i+5, Acknowledged), get(k, "", i+1, i+3), get(k, v, i+6, i+7))
		readBack = append(readBack, get(k, v, 20000, 20001))
	}
	r, _ := Analyze(history, readBack, ms(20000), time.Minute)
	assert.Equal(t, porcupine.Ok, r.Linearizability)
	assert.Equal(t, 20000, r.Reads)

	history[3*777+2] = get(fmt.Sprintf("k/%010d", 777), "", 777+6, 777+7)
	r, _ = Analyze(history, readBack, ms(20000), time.Minute)
	assert.Equal(t, porcupine.Illegal, r.Linearizability)
	assert.Equal(t, []string{"k/0000000777"}, r.IllegalKeys)
	assert.Zero(t, r.LostWrites)
}

func TestOutcome(t *testing.T) {
	assert.Equal(t, Acknowledged, outcome(nil))
	assert.Equal(t, Failed, outcome(rpctypes.ErrTooManyRequests))
	assert.Equal(t, Failed, outcome(status.Error(codes.Unknown, "raft proposal dropped")))
	assert.Equal(t, Unknown, outcome(rpctypes.ErrTimeout))
	assert.Equal(t, Unknown, outcome(status.Error(codes.Unavailable, "connection refused")))
	assert.Equal(t, Unknown, outcome(errors.New("context deadline exceeded")))
}

func TestMaxGap(t *testing.T) {
	gap, at := maxGap(nil, ms(50))
	assert.Equal(t, ms(50), gap)
	assert.Equal(t, ms(0), at)
	gap, at = maxGap([]time.Duration{ms(30), ms(10), ms(12), ms(70)}, ms(60))
	assert.Equal(t, ms(40), gap, "from 30 to 70: an acknowledgement after the end counts")
	assert.Equal(t, ms(30), at)
}

func TestSummary(t *testing.T) {
	r := Report{OK: true, AcknowledgedWrites: 3, Linearizability: porcupine.Ok, MinHealthyMembers: 2, HealthSamples: 5}
	assert.Contains(t, r.Summary(), "etcdcheck OK: 3 writes acknowledged")
	r = Report{Error: "read back: timeout"}
	assert.Contains(t, r.Summary(), "etcdcheck FAILED")
	assert.Contains(t, r.Summary(), "error: read back: timeout")
}
