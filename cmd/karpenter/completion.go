package main

import (
	"sort"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
)

// completeValues makes the shell complete a flag with values, and nothing else (no file names).
func completeValues(cmd *cobra.Command, flag string, values ...string) {
	_ = cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
}

// completeContexts makes the shell complete a --context flag with the contexts of the
// kubeconfig (KUBECONFIG, or ~/.kube/config).
func completeContexts(cmd *cobra.Command) {
	_ = cmd.RegisterFlagCompletionFunc("context", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		config, err := clientcmd.NewDefaultClientConfigLoadingRules().Load()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names := make([]string, 0, len(config.Contexts))
		for name := range config.Contexts {
			names = append(names, name)
		}
		sort.Strings(names)
		return names, cobra.ShellCompDirectiveNoFileComp
	})
}
