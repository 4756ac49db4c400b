// Package cmd holds fedop's binaries, one directory each (fedop-manager:
// the operator; kubectl-fedop: the kubectl plugin, whose commands live in
// its package cli). A binary's main parses flags and wires packages
// together, nothing else.
package cmd
