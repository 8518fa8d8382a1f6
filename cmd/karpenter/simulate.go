package main

import "github.com/spf13/cobra"

func newSimulateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "simulate WORKLOAD.yaml",
		Short: "Run the controllers offline over a workload and report nodes, cost and timing",
		Args:  cobra.ExactArgs(1),
		RunE: func(*cobra.Command, []string) error {
			return notBuiltYet("simulate")
		},
	}
}
