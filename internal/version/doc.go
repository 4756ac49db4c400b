// Package version holds the version and commit that fedop's binaries were
// built from. The build sets them with the linker (-ldflags -X, see
// LDFlags in the Makefile and hack/kind/images.sh); a plain `go build`
// leaves the defaults, "dev" and "unknown", and Get then falls back to the
// VCS revision the Go toolchain recorded, when there is one.
//
// It has no dependencies beyond the standard library, so that every binary
// (fedop-manager, the kubectl plugin) can print the same line.
package version
