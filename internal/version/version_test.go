package version

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGetUsesLinkerValues(t *testing.T) {
	oldVersion, oldCommit := version, commit
	t.Cleanup(func() { version, commit = oldVersion, oldCommit })
	version, commit = "v1.2.3", "0123456789abcdef"

	i := Get()
	assert.Equal(t, Info{Version: "v1.2.3", Commit: "0123456789abcdef", GoVersion: runtime.Version()}, i)
	assert.Equal(t, "v1.2.3 (commit 0123456789abcdef, "+runtime.Version()+")", i.String())
}

func TestGetDefaultsWhenNotStamped(t *testing.T) {
	// A test binary has no vcs.revision, so the defaults stay.
	i := Get()
	assert.Equal(t, "dev", i.Version)
	assert.NotEmpty(t, i.Commit)
}

func TestUserAgent(t *testing.T) {
	oldVersion, oldCommit := version, commit
	t.Cleanup(func() { version, commit = oldVersion, oldCommit })
	version, commit = "v1.2.3", "0123456789abcdef"

	assert.Equal(t, "fedop-manager/v1.2.3 ("+runtime.GOOS+"/"+runtime.GOARCH+") fedop/01234567", UserAgent("fedop-manager"))
}
