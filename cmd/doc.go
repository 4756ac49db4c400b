// Package cmd holds fedop's binaries, one directory each (fedop-manager:
// the operator). A binary's main parses flags and wires packages together,
// nothing else.
package cmd
