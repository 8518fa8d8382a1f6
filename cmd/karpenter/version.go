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
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionLine())
			return err
		},
	}
}

// versionLine is what `karpenter version` and `karpenter --version` print: the version and the
// VCS revision the binary was built from.
func versionLine() string {
	revision := "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
	}
	return fmt.Sprintf("karpenter %s (revision %s)", version, revision)
}
