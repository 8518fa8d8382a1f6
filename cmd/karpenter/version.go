package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is stamped at build time with -ldflags "-X main.version=v1.2.3".
var version = "dev"

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			revision := "unknown"
			if info, ok := debug.ReadBuildInfo(); ok {
				for _, s := range info.Settings {
					if s.Key == "vcs.revision" {
						revision = s.Value
					}
				}
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "karpenter %s (revision %s)\n", version, revision)
			return err
		},
	}
}
