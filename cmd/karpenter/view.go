package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/view"
)

func newViewCommand() *cobra.Command {
	var (
		kubeconfig, kubeContext, sortBy, nodeSelector string
		once, noColor                                 bool
		interval                                      time.Duration
	)
	sortNames := make([]string, len(view.SortKeys))
	for i, k := range view.SortKeys {
		sortNames[i] = string(k)
	}
	cmd := &cobra.Command{
		Use:   "view",
		Short: "A live terminal view of a cluster's nodes: cost, requested CPU and memory, pods, state",
		Long: `Show the nodes of a cluster, redrawn in place every --interval until Ctrl-C: what the cluster
costs per hour and per month, how many nodes it has, how many NodeClaims are launching and how
many pods are pending, and one line per node (and per NodeClaim without a node yet) with its
NodePool, instance type, capacity type, zone, $/hour, bars of the CPU and memory its pods request
out of its allocatable, its pod count, age and state. Nodes Karpenter does not manage show
NodePool "(none)". Prices are the embedded EC2 catalog's on-demand prices and modelled spot
prices; types it does not know show "-" and are left out of the totals.

Works against any cluster: --kubeconfig, else KUBECONFIG, else ~/.kube/config, else the
in-cluster config. When standard output is not a terminal, or with --once, it prints one frame
without colours or cursor movement and exits.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			key, err := view.ParseSortKey(sortBy)
			if err != nil {
				return usageError{fmt.Errorf("--sort: %w", err)}
			}
			selector, err := labels.Parse(nodeSelector)
			if err != nil {
				return usageError{fmt.Errorf("--node-selector: %w", err)}
			}
			if interval <= 0 {
				return usageError{fmt.Errorf("--interval %s: must be positive", interval)}
			}
			ctrl.SetLogger(logr.Discard())
			cfg, err := viewRestConfig(kubeconfig, kubeContext)
			if err != nil {
				return fmt.Errorf("loading kubeconfig: %w", err)
			}
			prices, err := catalog.DefaultPrices()
			if err != nil {
				return fmt.Errorf("loading prices: %w", err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()

			out := cmd.OutOrStdout()
			stdout, isFile := out.(*os.File)
			terminal := isFile && view.IsTerminal(stdout)
			snapshot := view.Options{Prices: prices, Selector: selector, Sort: key}
			render := view.RenderOptions{Color: terminal && !noColor && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"}
			if once || !terminal {
				src, err := view.NewClientSource(cfg, selector)
				if err != nil {
					return err
				}
				snapshot.Now = time.Now()
				return view.Once(ctx, src, out, snapshot, render)
			}
			fmt.Fprintln(out, "Listing nodes, nodeclaims and pods…")
			src, err := view.NewCacheSource(ctx, cfg, selector)
			if err != nil {
				if ctx.Err() != nil {
					return nil // interrupted while listing
				}
				return err
			}
			return view.Watch(ctx, src, out, view.WatchOptions{
				Snapshot: snapshot,
				Render:   render,
				Interval: interval,
				Size:     func() (int, int, bool) { return view.TerminalSize(stdout) },
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster; empty means KUBECONFIG, ~/.kube/config or the in-cluster config")
	f.StringVar(&kubeContext, "context", "", "kubeconfig context to use; empty means the current one")
	f.StringVar(&sortBy, "sort", string(view.SortCreation), "order of the nodes: "+strings.Join(sortNames, ", ")+
		" (oldest, most expensive, fullest first)")
	f.StringVar(&nodeSelector, "node-selector", "", "show only the nodes and NodeClaims with these labels, such as karpenter.sh/nodepool=default")
	f.BoolVar(&once, "once", false, "print one frame and exit (the default when standard output is not a terminal)")
	f.DurationVar(&interval, "interval", view.DefaultInterval, "time between redraws")
	f.BoolVar(&noColor, "no-color", false, "no colours (also when NO_COLOR is set)")
	return cmd
}

// viewRestConfig loads the cluster's config as kubectl does: an explicit kubeconfig file, else
// KUBECONFIG, else ~/.kube/config, else the in-cluster config; kubeContext, when set, picks the
// context.
func viewRestConfig(kubeconfig, kubeContext string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: kubeContext}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "karpenter-view"
	// Deprecation warnings from the API server would scribble over the screen.
	cfg.WarningHandler = rest.NoWarnings{}
	return cfg, nil
}
