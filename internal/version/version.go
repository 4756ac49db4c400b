package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by the linker: -X github.com/fedop-io/fedop/internal/version.version=v0.1.0
// -X github.com/fedop-io/fedop/internal/version.commit=<git sha>. They are
// variables, not constants, because -X can only set variables.
var (
	version = "dev"
	commit  = "unknown"
)

// Info is what a binary reports about its build: Version is a release tag
// (v0.1.0) or `git describe` output, "dev" when not stamped; Commit is the
// full git SHA, "unknown" when neither the linker nor the Go toolchain
// recorded one; GoVersion is the toolchain's, e.g. go1.26.0.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"goVersion"`
}

// Get returns the build's Info. When the linker did not set the commit it
// uses vcs.revision from the build info, which `go build` records in a git
// checkout unless -buildvcs=false.
func Get() Info {
	i := Info{Version: version, Commit: commit, GoVersion: runtime.Version()}
	if i.Commit == "unknown" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" && s.Value != "" {
					i.Commit = s.Value
				}
			}
		}
	}
	return i
}

// String formats i as one line, e.g. "v0.1.0 (commit 3e45794e, go1.26.0)";
// it is what `fedop-manager --version` prints after the binary's name.
func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, %s)", i.Version, i.Commit, i.GoVersion)
}

// UserAgent returns the User-Agent a fedop binary named name sends to API
// servers, in the shape of client-go's rest.DefaultKubernetesUserAgent,
// e.g. "fedop-manager/v0.1.0 (linux/amd64) fedop/3e45794e": an API
// server's audit log then names fedop's version and commit (the first 8
// characters). client-go's default names client-go's own build instead,
// "v0.0.0 (...) kubernetes/$Format" in a module build.
func UserAgent(name string) string {
	i := Get()
	return fmt.Sprintf("%s/%s (%s/%s) fedop/%.8s", name, i.Version, runtime.GOOS, runtime.GOARCH, i.Commit)
}
