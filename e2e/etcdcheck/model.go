package etcdcheck

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// register is the state of one key: absent, or holding value.
type register struct {
	found bool
	value string
}

// kvInput is a put of value to key, or a get of key.
type kvInput struct {
	key   string
	put   bool
	value string
}

// kvOutput is what a get found; a put's output is empty.
type kvOutput register

// model is a key-value store as porcupine checks it: partitioned by key,
// each key a register that starts absent (the checker deletes its prefix
// before it starts), as in etcd's robustness tests. A put always succeeds
// in the model; a put whose outcome is unknown has no return time (see
// operations), so the checker may place it anywhere after its call,
// including after every read, which is "it never happened".
var model = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(kvInput).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		parts := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, byKey[k])
		}
		return parts
	},
	Init: func() any { return register{} },
	Step: func(state, input, output any) (bool, any) {
		s, in := state.(register), input.(kvInput)
		if in.put {
			return true, register{found: true, value: in.value}
		}
		return output.(kvOutput) == kvOutput(s), s
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(kvInput), output.(kvOutput)
		switch {
		case in.put:
			return fmt.Sprintf("put(%s, %s)", in.key, in.value)
		case out.found:
			return fmt.Sprintf("get(%s) -> %s", in.key, out.value)
		default:
			return fmt.Sprintf("get(%s) -> absent", in.key)
		}
	},
	DescribeState: func(state any) string {
		if s := state.(register); s.found {
			return s.value
		}
		return "absent"
	},
}

// operations turns a history into porcupine's operations. Failed puts and
// gets that did not succeed are left out: they changed nothing and
// observed nothing. A put whose outcome is unknown returns at +infinity.
func operations(history []Op) []porcupine.Operation {
	ops := make([]porcupine.Operation, 0, len(history))
	for _, op := range history {
		if op.Outcome == Failed || (!op.Put && op.Outcome != Acknowledged) {
			continue
		}
		in, out, ret := kvInput{key: op.Key, put: true, value: op.Value}, kvOutput{}, int64(op.Return)
		if !op.Put {
			in, out = kvInput{key: op.Key}, kvOutput{found: op.Found, value: op.Value}
		}
		if op.Outcome == Unknown {
			ret = math.MaxInt64
		}
		ops = append(ops, porcupine.Operation{ClientId: op.Client, Input: in, Call: int64(op.Call), Output: out, Return: ret})
	}
	return ops
}

// checkChunk is how many keys one porcupine call checks. porcupine runs a
// goroutine per partition (key) at once; chunks bound that for a history
// of hundreds of thousands of keys.
const checkChunk = 10000

// checkLinearizable checks history with porcupine, checkChunk keys at a
// time, for at most timeout in all (0: no limit). It returns Ok, Illegal
// (with the details of the first illegal chunk, for a visualization) or
// Unknown (timed out).
func checkLinearizable(history []Op, timeout time.Duration) (porcupine.CheckResult, porcupine.LinearizationInfo) {
	byKey := map[string][]porcupine.Operation{}
	for _, op := range operations(history) {
		k := op.Input.(kvInput).key
		byKey[k] = append(byKey[k], op)
	}
	keys := slices.Sorted(maps.Keys(byKey))
	start := time.Now()
	result := porcupine.Ok
	for chunk := range slices.Chunk(keys, checkChunk) {
		var ops []porcupine.Operation
		for _, k := range chunk {
			ops = append(ops, byKey[k]...)
		}
		left := time.Duration(0)
		if timeout > 0 {
			if left = timeout - time.Since(start); left <= 0 {
				return porcupine.Unknown, porcupine.LinearizationInfo{}
			}
		}
		switch res, info := porcupine.CheckOperationsVerbose(model, ops, left); res {
		case porcupine.Illegal:
			return res, info
		case porcupine.Unknown:
			result = res
		}
	}
	return result, porcupine.LinearizationInfo{}
}
