package main

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProc reads this test process itself: it is not a fedop-manager, it
// has used some CPU and holds some memory.
func TestProc(t *testing.T) {
	pid := os.Getpid()
	cpu, err := cpuSeconds(pid)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, cpu, 0.0)
	rss, err := rssBytes(pid)
	require.NoError(t, err)
	assert.Greater(t, rss, float64(1<<20))
	assert.False(t, managerAlive(pid), "a test binary is no fedop-manager")
	cmd, err := commandLine(pid)
	require.NoError(t, err)
	assert.Contains(t, cmd, os.Args[0])
	avail, err := memAvailable()
	require.NoError(t, err)
	assert.Greater(t, avail, 0.0)
	mem, _ := memoryAndCPUModel()
	assert.Regexp(t, `^\d+ kB$`, mem)
	assert.Regexp(t, `^\d+\.\d\d \d+\.\d\d \d+\.\d\d$`, loadAverage())
	_, err = cpuSeconds(-1)
	assert.Error(t, err)
}
