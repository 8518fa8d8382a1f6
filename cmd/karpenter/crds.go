package main

import (
	"fmt"
	"sort"

	"github.com/spf13/cobra"

	"github.com/openkarpenter/karpenter/config/crd"
)

func newCRDsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "crds",
		Short: "Print the CustomResourceDefinitions (pipe to kubectl apply -f -)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			manifests, err := crd.Manifests()
			if err != nil {
				return err
			}
			names := make([]string, 0, len(manifests))
			for name := range manifests {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				if _, err := fmt.Fprintf(cmd.OutOrStdout(), "%s", manifests[name]); err != nil {
					return err
				}
			}
			return nil
		},
	}
}
