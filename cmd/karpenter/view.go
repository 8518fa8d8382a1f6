package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/view"
)

func newViewCommand() *cobra.Command {
	var (
		kubeconfig, kubeContext, nodeSort, nodeSelector string
		resources, extraLabels                          string
		once, noColor                                   bool
		interval                                        time.Duration
	)
	sortNames := make([]string, len(view.SortKeys))
	for i, k := range view.SortKeys {
		sortNames[i] = string(k)
	}
	cmd := &cobra.Command{
		Use:   "view",
		Short: "A live terminal view of a cluster's nodes: cost, requested CPU, memory or any resource, pods, state",
		Long: `Show the nodes of a cluster, redrawn in place every --interval until q or Ctrl-C: what the
cluster costs per hour and per month, how many nodes it has, how many NodeClaims are launching
and how many pods are pending, the cluster's requests of each of --resources out of its
allocatable, and one line per node (and per NodeClaim without a node yet) with its NodePool,
instance type, capacity type, zone, $/hour, a bar per resource of what its pods request out of
its allocatable, its pods out of the most it may run, its age, its state, and the values of
--extra-labels. Nodes Karpenter does not manage show NodePool "(none)". Prices are the embedded
EC2 catalog's on-demand prices and modelled spot prices; types it does not know show "-" and
are left out of the totals.

--resources, --extra-labels, --node-selector and --node-sort take eks-node-viewer's values,
including its computed labels eks-node-viewer/node-age and eks-node-viewer/node-RESOURCE-usage
(such as eks-node-viewer/node-cpu-usage). When the nodes do not fit the terminal they are
split into pages: ←/→ (or h/l, PgUp/PgDn, Home/End) turn them.

Works against any cluster: --kubeconfig, else KUBECONFIG, else ~/.kube/config, else the
in-cluster config. It lists (and, live, watches) Nodes, Pods and DaemonSets, and NodeClaims and
NodePools where the cluster serves them. When standard output is not a terminal, or with --once, it prints one frame
with every node, without colours or cursor movement, and exits.`,
		Example: `  karpenter view --resources cpu,memory,nvidia.com/gpu
  karpenter view --extra-labels topology.kubernetes.io/zone,karpenter.sh/nodepool
  karpenter view --node-sort eks-node-viewer/node-cpu-usage=dsc
  karpenter view --node-sort creation=asc --node-selector karpenter.sh/nodepool`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			key, order, err := view.ParseSort(nodeSort)
			if err != nil {
				return usageError{fmt.Errorf("--node-sort: %w", err)}
			}
			shown, err := view.ParseResources(resources)
			if err != nil {
				return usageError{fmt.Errorf("--resources: %w", err)}
			}
			labelKeys, err := view.ParseExtraLabels(extraLabels)
			if err != nil {
				return usageError{fmt.Errorf("--extra-labels: %w", err)}
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
			snapshot := view.Options{Prices: prices, Selector: selector, Sort: key, Order: order, Resources: shown, ExtraLabels: labelKeys,
				InstanceTypes: catalogInstanceTypes(prices)}
			render := view.RenderOptions{Color: terminal && !noColor && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"}
			if once || !terminal {
				src, err := view.NewClientSource(cfg, selector)
				if err != nil {
					return err
				}
				snapshot.Now = time.Now()
				err = view.Once(ctx, src, out, snapshot, render)
				if unknown := (*view.UnknownResourcesError)(nil); errors.As(err, &unknown) {
					return usageError{err}
				}
				return err
			}
			fmt.Fprintln(out, "Listing nodes, nodeclaims and pods…")
			src, err := view.NewCacheSource(ctx, cfg, selector)
			if err != nil {
				if ctx.Err() != nil {
					return nil // interrupted while listing
				}
				return err
			}
			// The first read tells a resource no node has, before the screen is taken.
			if objs, err := src.Read(ctx); err == nil {
				if err := view.CheckResources(objs, shown); err != nil {
					return usageError{err}
				}
			}
			watch := view.WatchOptions{
				Snapshot: snapshot,
				Render:   render,
				Interval: interval,
				Size:     func() (int, int, bool) { return view.TerminalSize(stdout) },
			}
			// Pages turn with keys when they can be read from a terminal; otherwise the first
			// page shows, and says that a taller terminal shows more.
			if stdin, ok := cmd.InOrStdin().(*os.File); ok && view.IsTerminal(stdin) {
				if restore, err := view.EnableKeys(stdin); err == nil {
					defer func() { _ = restore() }()
					watch.Keys = stdin
				}
			}
			return view.Watch(ctx, src, out, watch)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster; empty means KUBECONFIG, ~/.kube/config or the in-cluster config")
	f.StringVar(&kubeContext, "context", "", "kubeconfig context to use; empty means the current one")
	f.StringVar(&nodeSort, "node-sort", string(view.SortCreation), "order of the nodes, as eks-node-viewer's: "+strings.Join(sortNames, ", ")+
		", a label key, eks-node-viewer/node-age or eks-node-viewer/node-RESOURCE-usage, optionally followed by =asc or =dsc;"+
		" creation, price, cpu and memory default to dsc (oldest, most expensive, fullest first), the others to asc (--sort is an alias)")
	f.StringVar(&resources, "resources", "cpu,memory", "comma-separated resources whose requests against allocatable to show, such as cpu,memory,nvidia.com/gpu")
	f.StringVar(&extraLabels, "extra-labels", "", "comma-separated node label keys to show in columns of their own, such as topology.kubernetes.io/zone,karpenter.sh/nodepool, or eks-node-viewer/node-age, eks-node-viewer/node-RESOURCE-usage")
	f.StringVar(&nodeSelector, "node-selector", "", "show only the nodes and NodeClaims with these labels, such as karpenter.sh/nodepool=default")
	f.BoolVar(&once, "once", false, "print one frame and exit (the default when standard output is not a terminal)")
	f.DurationVar(&interval, "interval", view.DefaultInterval, "time between redraws")
	f.BoolVar(&noColor, "no-color", false, "no colours (also when NO_COLOR is set)")
	// --sort is what the flag was first called; --node-sort is eks-node-viewer's name.
	f.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if name == "sort" {
			name = "node-sort"
		}
		return pflag.NormalizedName(name)
	})
	completeValues(cmd, "node-sort", sortNames...)
	completeContexts(cmd)
	completeNodeSelector(cmd)
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

// catalogInstanceTypes gives the view the instance types of the embedded EC2 catalog, with the
// default NodeClass settings, offered in the given zones at prices, for the packing ratio:
// built once per set of zones.
func catalogInstanceTypes(prices cloudprovider.Prices) func(*karpv1.NodePool, []string) ([]*cloudprovider.InstanceType, error) {
	var (
		mu    sync.Mutex
		built = map[string][]*cloudprovider.InstanceType{}
	)
	return func(_ *karpv1.NodePool, zones []string) ([]*cloudprovider.InstanceType, error) {
		mu.Lock()
		defer mu.Unlock()
		key := strings.Join(zones, ",")
		if its, ok := built[key]; ok {
			return its, nil
		}
		its, err := cloudprovider.DefaultInstanceTypes(cloudprovider.InstanceTypeOptions{Zones: zones, Prices: prices})
		if err != nil {
			return nil, err
		}
		built[key] = its
		return its, nil
	}
}
