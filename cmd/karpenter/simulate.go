package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/openkarpenter/karpenter/pkg/simulate"
)

func newSimulateCommand() *cobra.Command {
	var (
		output string
		seed   int64
	)
	cmd := &cobra.Command{
		Use:   "simulate WORKLOAD.yaml",
		Short: "Run the controllers offline over a workload and report nodes, cost and timing",
		Long: `Run Karpenter's provisioning and node lifecycle controllers offline, on an in-memory cluster
and a simulated cloud (the EC2 catalog and prices), over the timeline of a workload file, on a
virtual clock. Reports the nodes launched, what they cost, how long pods waited and how full the
fleet was. The same workload and seed always give the same report. See examples/ for workloads.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return usageError{fmt.Errorf("--output %q: must be text or json", output)}
			}
			w, err := simulate.LoadWorkload(args[0])
			if err != nil {
				return usageError{err}
			}
			opts := simulate.Options{}
			if cmd.Flags().Changed("seed") {
				opts.Seed = &seed
			}
			interactive := output == "text" && isTerminal(os.Stderr)
			if interactive {
				last := time.Now()
				opts.Progress = func(done, total time.Duration) {
					if time.Since(last) < 100*time.Millisecond && done < total {
						return
					}
					last = time.Now()
					fmt.Fprintf(os.Stderr, "\r%s %s / %s", progressBar(done, total, 30), done.Truncate(time.Second), total)
				}
			}
			report, err := simulate.Run(cmd.Context(), w, opts)
			if interactive {
				fmt.Fprint(os.Stderr, "\r\033[K")
			}
			if err != nil {
				return err
			}
			if output == "json" {
				return report.WriteJSON(cmd.OutOrStdout())
			}
			return report.WriteText(cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	cmd.Flags().Int64Var(&seed, "seed", 0, "seed of the simulated cloud (default: the workload's)")
	return cmd
}

func progressBar(done, total time.Duration, width int) string {
	filled := width
	if total > 0 {
		filled = int(float64(width) * float64(done) / float64(total))
	}
	bar := make([]byte, width)
	for i := range bar {
		bar[i] = '.'
		if i < filled {
			bar[i] = '#'
		}
	}
	return "[" + string(bar) + "]"
}

func isTerminal(f *os.File) bool {
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
