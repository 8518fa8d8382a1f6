package main

import "github.com/spf13/cobra"

func newControllerCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "controller",
		Short: "Run the controllers against a cluster (provisioning, lifecycle, disruption, termination)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return notBuiltYet("the controller")
		},
	}
}
