package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"
)

// Output formats of -o.
const (
	outputTable = ""
	outputJSON  = "json"
	outputYAML  = "yaml"
)

// addOutputFlag adds -o to cmd, for json and yaml next to the default
// table.
func addOutputFlag(cmd *cobra.Command, output *string) {
	cmd.Flags().StringVarP(output, "output", "o", outputTable, "Output format: json or yaml; a table when empty.")
}

// checkOutput returns an error for an -o value other than json or yaml.
func checkOutput(output string) error {
	switch output {
	case outputTable, outputJSON, outputYAML:
		return nil
	}
	return fmt.Errorf("unknown output format %q: use json or yaml", output)
}

// printStructured writes v as JSON (indented) or YAML to out.
func printStructured(out io.Writer, output string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the output: %w", err)
	}
	if output == outputYAML {
		if data, err = yaml.JSONToYAML(data); err != nil {
			return fmt.Errorf("encoding the output: %w", err)
		}
	} else {
		data = append(data, '\n')
	}
	_, err = out.Write(data)
	return err
}

// writeTable writes text to out through cli-runtime's tabwriter (kubectl's
// settings): tab-separated cells of adjacent lines are aligned, and a line
// without a tab ends a table.
func writeTable(out io.Writer, text string) error {
	w := printers.GetNewTabWriter(out)
	if _, err := io.WriteString(w, text); err != nil {
		return err
	}
	return w.Flush()
}

// say prints a line of what a command did. The change is made by then: a
// failed write to the terminal changes nothing of it, so, as kubectl's own
// messages, it is not an error.
func (o *Options) say(format string, args ...any) {
	_, _ = fmt.Fprintf(o.Out, format+"\n", args...)
}

// isTerminal says whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// ago says how long before now t was, kubectl's way ("5m"), or "-" for
// the zero time.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return duration.HumanDuration(now.Sub(t))
}

// until says how long after now t is ("in 23h"), "expired 5m ago", or
// "-" for the zero time.
func until(now, t time.Time) string {
	switch {
	case t.IsZero():
		return "-"
	case t.Before(now):
		return "expired " + duration.HumanDuration(now.Sub(t)) + " ago"
	default:
		return "in " + duration.HumanDuration(t.Sub(now))
	}
}

// dash returns s, or "-" when it is empty, for table cells.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ANSI colors of status, used only on a terminal without --no-color.
const (
	colorReset  = "\x1b[0m"
	colorGreen  = "\x1b[32m"
	colorYellow = "\x1b[33m"
	colorRed    = "\x1b[31m"
)

// painter colors words when enabled.
type painter bool

func (p painter) paint(color, s string) string {
	if !p {
		return s
	}
	return color + s + colorReset
}
