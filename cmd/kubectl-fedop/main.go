// Command kubectl-fedop is fedop's kubectl plugin: put it on PATH and run
// `kubectl fedop`. The commands are in package cli.
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/fedop-io/fedop/cmd/kubectl-fedop/cli"
)

func main() {
	cmd := cli.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}
