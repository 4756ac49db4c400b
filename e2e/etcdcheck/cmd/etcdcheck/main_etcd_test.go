//go:build etcd

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/fedop-io/fedop/e2e/etcdcheck"
	"github.com/fedop-io/fedop/hack/etcd/etcdtest"
)

// TestStop runs the etcdcheck binary against three real etcd members on
// 127.0.0.1 (go test -tags etcd ./e2e/etcdcheck/...) and stops it in each
// of the ways a test or a Job can, then reads the JSON report from the last
// line of its stdout, as a test reads it from the pod's log.
func TestStop(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "etcdcheck")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	versions := etcdtest.Versions(etcdtest.Build(t))
	cl := etcdtest.Start(t, 3, versions[len(versions)-1])
	stopFile := filepath.Join(t.TempDir(), "stop")

	for _, tt := range []struct {
		name string
		args []string
		stop func(t *testing.T, cmd *exec.Cmd, control string)
	}{{
		name: "GET /stop",
		stop: func(t *testing.T, _ *exec.Cmd, control string) {
			code, body := etcdtest.Get(context.Background(), control+"/stop")
			require.Equal(t, 200, code, body)
		},
	}, {
		name: "stop file",
		args: []string{"--stop-file=" + stopFile},
		stop: func(t *testing.T, _ *exec.Cmd, _ string) {
			require.NoError(t, os.WriteFile(stopFile, nil, 0o600))
		},
	}, {
		name: "SIGTERM",
		stop: func(t *testing.T, cmd *exec.Cmd, _ string) {
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		},
	}, {
		name: "duration",
		args: []string{"--duration=3s"},
		stop: func(*testing.T, *exec.Cmd, string) {},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			control := fmt.Sprintf("127.0.0.1:%d", etcdtest.FreePorts(t, 1)[0])
			var stdout bytes.Buffer
			cmd := exec.Command(bin, append([]string{"--endpoints=" + strings.Join(cl.Endpoints(), ","), "--listen=" + control}, tt.args...)...)
			cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
			require.NoError(t, cmd.Start())
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()

			err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				code, body := etcdtest.Get(ctx, "http://"+control+"/progress")
				var p etcdcheck.Progress
				return code == 200 && json.Unmarshal([]byte(body), &p) == nil && p.AcknowledgedWrites >= 100, nil
			})
			require.NoError(t, err, "waiting for 100 acknowledged writes")
			tt.stop(t, cmd, "http://"+control)
			select {
			case err := <-exited:
				require.NoError(t, err, "etcdcheck exits 0 when the report is OK")
			case <-time.After(time.Minute):
				_ = cmd.Process.Kill()
				t.Fatal("etcdcheck did not exit within a minute of being stopped")
			}

			lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
			require.Len(t, lines, 2, "a line for people, then the JSON report")
			assert.Contains(t, lines[0], "etcdcheck OK")
			var r etcdcheck.Report
			require.NoError(t, json.Unmarshal([]byte(lines[1]), &r))
			assert.True(t, r.OK)
			assert.Zero(t, r.LostWrites)
			assert.GreaterOrEqual(t, r.AcknowledgedWrites, 100)
			assert.Equal(t, 3, r.MinHealthyMembers)
			assert.Len(t, r.MembersStart, 3)
		})
	}
}
