package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/apis"
	"github.com/openkarpenter/karpenter/pkg/simulate"
)

// liveCluster is the value of a bare --from-cluster: read the cluster of the kubeconfig.
const liveCluster = "(live)"

// clusterFlags are simulate's --from-cluster flags.
type clusterFlags struct {
	fromCluster, kubeconfig, kubeContext, adoptNodes string
	settle                                           time.Duration
}

// addClusterFlags registers the --from-cluster flags on simulate.
func addClusterFlags(cmd *cobra.Command, f *clusterFlags) {
	flags := cmd.Flags()
	flags.StringVar(&f.fromCluster, "from-cluster", "", "simulate a cluster: bare, the live cluster of the kubeconfig (read-only: get and list); =FILE, a dump of one (kubectl get nodes,pods,daemonsets,pdb,pvc,pv,storageclasses,nodepools,ec2nodeclasses,nodeclaims -A -o yaml > FILE). Arguments are then NodePool and EC2NodeClass files, replacing the cluster's of the same name and adding to them")
	flags.Lookup("from-cluster").NoOptDefVal = liveCluster
	flags.StringVar(&f.kubeconfig, "kubeconfig", "", "with --from-cluster: kubeconfig of the cluster; empty means KUBECONFIG, ~/.kube/config or the in-cluster config")
	flags.StringVar(&f.kubeContext, "context", "", "with --from-cluster: kubeconfig context to use; empty means the current one")
	flags.StringVar(&f.adoptNodes, "adopt-nodes", "", "with --from-cluster: take the nodes Karpenter does not manage (managed node groups) into this NodePool, so that consolidation may act on them (default: report them as unmanaged)")
	flags.DurationVar(&f.settle, "settle", simulate.DefaultSettle, "with --from-cluster: how long consolidation runs on the virtual clock after the longest consolidateAfter")
}

// clusterOnly are the flags that mean nothing without --from-cluster.
var clusterOnly = []string{"kubeconfig", "context", "adopt-nodes", "settle"}

// runFromCluster is `karpenter simulate --from-cluster`.
func runFromCluster(cmd *cobra.Command, f clusterFlags, files []string, output, htmlReport, compare string, seed int64) error {
	switch {
	case compare != "":
		return usageError{fmt.Errorf("--compare: not available with --from-cluster; give the NodePool files to simulate with as arguments instead")}
	case f.settle <= 0:
		return usageError{fmt.Errorf("--settle %s: must be positive", f.settle)}
	}
	for _, a := range files {
		if a == "-" {
			return usageError{fmt.Errorf("- (standard input): with --from-cluster, the arguments are NodePool and EC2NodeClass files")}
		}
	}
	var cluster *simulate.Cluster
	var err error
	if f.fromCluster == liveCluster {
		cluster, err = readLiveCluster(cmd.Context(), f.kubeconfig, f.kubeContext)
		if err != nil {
			return err
		}
	} else {
		for _, flag := range []string{"kubeconfig", "context"} {
			if cmd.Flags().Changed(flag) {
				return usageError{fmt.Errorf("--%s: reads a live cluster, not the dump %s (use a bare --from-cluster for the kubeconfig's cluster)", flag, f.fromCluster)}
			}
		}
		if cluster, err = simulate.LoadClusterDump(f.fromCluster); err != nil {
			return usageError{err}
		}
	}
	opts := simulate.ClusterOptions{NodePoolFiles: files, AdoptUnmanaged: f.adoptNodes, Settle: f.settle}
	if cmd.Flags().Changed("seed") {
		opts.Seed = seed
	}
	interactive := output == "text" && isTerminal(os.Stderr)
	if interactive {
		last := time.Now()
		opts.Progress = func(name string, done, total time.Duration) {
			if time.Since(last) < 100*time.Millisecond && done < total {
				return
			}
			last = time.Now()
			fmt.Fprintf(os.Stderr, "\r%-17s %s %s / %s", name, progressBar(done, total, 30), done.Truncate(time.Second), total)
		}
	}
	run, err := simulate.PrepareCluster(cluster, opts)
	if err != nil {
		return usageError{err}
	}
	tuneGC()
	rep, err := run.Run(cmd.Context())
	if interactive {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
	if err != nil {
		return err
	}
	rep.Version = version
	return writeOutput(cmd.OutOrStdout(), rep, output, htmlReport, clusterPageLabel)
}

// readLiveCluster reads the cluster of a kubeconfig through a client that is only used to get
// and list.
func readLiveCluster(ctx context.Context, kubeconfig, kubeContext string) (*simulate.Cluster, error) {
	cfg, err := viewRestConfig(kubeconfig, kubeContext)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig (a dump of a cluster is read with --from-cluster=FILE): %w", err)
	}
	cfg.UserAgent = "karpenter-simulate"
	kube, err := client.New(cfg, client.Options{Scheme: apis.NewScheme()})
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	source := "the kubeconfig's current context"
	if kubeContext != "" {
		source = fmt.Sprintf("context %q", kubeContext)
	} else if raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig, Precedence: clientcmd.NewDefaultClientConfigLoadingRules().Precedence}, nil).RawConfig(); err == nil && raw.CurrentContext != "" {
		source = fmt.Sprintf("context %q", raw.CurrentContext)
	}
	var reader client.Reader = kube // read-only from here on
	return simulate.ReadCluster(ctx, reader, source)
}
