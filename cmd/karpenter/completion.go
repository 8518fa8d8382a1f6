package main

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/apis"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
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

// completionTimeout bounds how long a completion may read the cluster: a shell waits for it.
const completionTimeout = 3 * time.Second

// completeNodeSelector makes the shell complete view's --node-selector with the cluster's
// NodePools (karpenter.sh/nodepool=NAME) and nodes (kubernetes.io/hostname=NAME), read with the
// command's --kubeconfig and --context; nothing when the cluster cannot be read.
func completeNodeSelector(cmd *cobra.Command) {
	_ = cmd.RegisterFlagCompletionFunc("node-selector", func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		kubeconfig, _ := cmd.Flags().GetString("kubeconfig")
		kubeContext, _ := cmd.Flags().GetString("context")
		cfg, err := viewRestConfig(kubeconfig, kubeContext)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		cfg.Timeout = completionTimeout
		kube, err := client.New(cfg, client.Options{Scheme: apis.NewScheme()})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
		defer cancel()
		// The selectors already typed, comma-separated, are kept before the one completed.
		prefix := ""
		if i := strings.LastIndex(toComplete, ","); i >= 0 {
			prefix = toComplete[:i+1]
		}
		var out []string
		var pools karpv1.NodePoolList
		if kube.List(ctx, &pools) == nil {
			for _, np := range pools.Items {
				out = append(out, prefix+karpv1.NodePoolLabelKey+"="+np.Name)
			}
		}
		var nodes corev1.NodeList
		if kube.List(ctx, &nodes) == nil {
			for _, n := range nodes.Items {
				out = append(out, prefix+corev1.LabelHostname+"="+n.Labels[corev1.LabelHostname])
			}
		}
		sort.Strings(out)
		return out, cobra.ShellCompDirectiveNoFileComp
	})
}
