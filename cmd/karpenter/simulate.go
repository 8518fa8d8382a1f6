package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/openkarpenter/karpenter/pkg/convert"
	"github.com/openkarpenter/karpenter/pkg/simulate"
	"github.com/openkarpenter/karpenter/pkg/state"
)

func newSimulateCommand() *cobra.Command {
	var (
		output, htmlReport, compare string
		schedulerConfig             string
		seed                        int64
		cluster                     clusterFlags
	)
	cmd := &cobra.Command{
		Use:   "simulate WORKLOAD.yaml | MANIFESTS... | --from-cluster[=DUMP] [NODEPOOLS...]",
		Short: "Run the controllers offline over a workload and report nodes, cost and timing",
		Long: `Run Karpenter's provisioning and node lifecycle controllers offline, on an in-memory cluster
and a simulated cloud (the EC2 catalog and prices), over the timeline of a workload file, on a
virtual clock. Reports the nodes launched, what they cost, how long pods waited and how full the
fleet was. The same workload and seed always give the same report. See examples/ for workloads.
WORKLOAD.yaml may also be plain Kubernetes manifests (NodePools, EC2NodeClasses, Deployments,
StatefulSets, Jobs, DaemonSets, PodDisruptionBudgets, Namespaces, StorageClasses,
PersistentVolumes and PersistentVolumeClaims, each in the namespace it names), simulated for an
hour as if applied at once; - reads
standard input. Manifests may be split over several files and directories (their .yaml, .yml
and .json files), as for kubectl apply -f.

With --from-cluster, simulates a cluster instead: the live one of the kubeconfig (read-only), or
a dump of one (--from-cluster=FILE). It reports today's fleet and $/hour, what consolidation
would do to it now, step by step (honouring PodDisruptionBudgets, do-not-disrupt and budgets),
what would be launched for the same pods from scratch, and the savings. The arguments are then
NodePool and EC2NodeClass files: for a cluster without Karpenter, the NodePools to simulate
with; for one with it, they replace its NodePools of the same name and add to them.`,
		Example: `  karpenter simulate examples/web.yaml
  karpenter simulate nodepool.yaml ec2nodeclass.yaml deployment.yaml
  karpenter simulate manifests/
  karpenter simulate --from-cluster
  karpenter simulate --from-cluster --context prod nodepool.yaml
  karpenter simulate --from-cluster=examples/cluster/cluster-dump.yaml`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// The controllers' logs are not the simulation's output: the report says what
			// happened (and its warnings what went wrong).
			ctrl.SetLogger(logr.Discard())
			if output != "text" && output != "json" {
				return usageError{fmt.Errorf("--output %q: must be text or json", output)}
			}
			if htmlReport != "" {
				// Before the run, which may take minutes: a page that cannot be written fails now.
				if err := checkWritable(htmlReport); err != nil {
					return usageError{fmt.Errorf("--report %s: %w", htmlReport, err)}
				}
			}
			if _, err := state.ParseSchedulerConfig(schedulerConfig); err != nil {
				return usageError{fmt.Errorf("--scheduler-config: %w", err)}
			}
			if cluster.fromCluster != "" {
				if cmd.Flags().Changed("scheduler-config") {
					return usageError{errors.New("--scheduler-config: only with a workload file or manifests, not with --from-cluster, where it is not built")}
				}
				return runFromCluster(cmd, cluster, args, output, htmlReport, compare, seed)
			}
			for _, flag := range clusterOnly {
				if cmd.Flags().Changed(flag) {
					return usageError{fmt.Errorf("--%s: only with --from-cluster", flag)}
				}
			}
			if len(args) == 0 {
				return usageError{errors.New("requires a workload file or manifests, or --from-cluster")}
			}
			var w *simulate.Workload
			var err error
			if len(args) > 1 || isDir(args[0]) {
				for _, a := range args {
					if a == "-" {
						return usageError{errors.New("- (standard input) must be the only argument")}
					}
				}
				w, err = simulate.LoadManifests(args)
			} else if args[0] == "-" {
				data, readErr := convert.ReadLimited("standard input", cmd.InOrStdin())
				if readErr != nil {
					return usageError{readErr}
				}
				w, err = simulate.ParseWorkload("standard input", data)
			} else {
				w, err = simulate.LoadWorkload(args[0])
			}
			if err != nil {
				return usageError{err}
			}
			// Only now: parsing a hostile input must not run with the heap let grow 5x.
			tuneGC()
			opts := simulate.Options{SchedulerConfig: schedulerConfig}
			if cmd.Flags().Changed("seed") {
				opts.Seed = &seed
			}
			interactive := output == "text" && isTerminal(os.Stderr)
			if interactive {
				last := time.Now()
				opts.Progress = func(done, total time.Duration) {
					if time.Since(last) < 100*time.Millisecond && done < total {
						return
					}
					last = time.Now()
					fmt.Fprintf(os.Stderr, "\r%s %s / %s", progressBar(done, total, 30), done.Truncate(time.Second), total)
				}
			}
			var other *simulate.Workload
			if compare != "" {
				if other, err = w.WithManifests(compare); err != nil {
					return usageError{err}
				}
			}
			report, err := simulate.Run(cmd.Context(), w, opts)
			var otherReport *simulate.Report
			if err == nil && other != nil {
				otherReport, err = simulate.Run(cmd.Context(), other, opts)
			}
			if interactive {
				fmt.Fprint(os.Stderr, "\r\033[K")
			}
			if err != nil {
				return err
			}
			report.Version, report.Command = version, "karpenter simulate "+strings.Join(args, " ")
			if otherReport != nil {
				otherReport.Version = version
				return writeOutput(cmd.OutOrStdout(), simulate.Compare(strings.Join(args, " "), compare, report, otherReport), output, htmlReport, runPageLabel)
			}
			return writeOutput(cmd.OutOrStdout(), report, output, htmlReport, runPageLabel)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	cmd.Flags().Int64Var(&seed, "seed", 0, "seed of the simulated cloud (default: the workload's)")
	cmd.Flags().StringVar(&schedulerConfig, "scheduler-config", "", "the controller's --scheduler-config (SCHEDULER_CONFIG), a YAML or JSON document: its podTopologySpread.defaultConstraints apply to every pod with no topology spread constraint of its own, selecting its workload's pods")
	cmd.Flags().StringVar(&htmlReport, "report", "", "also write a self-contained HTML report with charts to this file")
	addClusterFlags(cmd, &cluster)
	cmd.Flags().StringVar(&compare, "compare", "", "run the same timeline with the NodePools and NodeClasses of this file too, and report the difference (as text, --output json, and the --report page)")
	completeValues(cmd, "output", "text", "json")
	completeContexts(cmd)
	return cmd
}

// The labels of the line that ends the text output with where the --report page is: a run's
// and a comparison's page, and a --from-cluster report's.
const (
	runPageLabel     = "Report with charts"
	clusterPageLabel = "Report page"
)

// writeOutput writes what simulate produced as its flags ask: the --report page first, if
// htmlReport names one, then the output as JSON or as text, the text ending with
// "\n<pageLabel>: <htmlReport>" when there is a page.
func writeOutput(out io.Writer, o simulate.Output, format, htmlReport, pageLabel string) error {
	if htmlReport != "" {
		if err := writeFile(htmlReport, func(w io.Writer) error { return simulate.WriteHTML(w, o) }); err != nil {
			return err
		}
	}
	if format == "json" {
		return simulate.WriteJSON(out, o)
	}
	if err := simulate.WriteText(out, o); err != nil {
		return err
	}
	if htmlReport != "" {
		fmt.Fprintf(out, "\n%s: %s\n", pageLabel, htmlReport)
	}
	return nil
}

func progressBar(done, total time.Duration, width int) string {
	filled := width
	if total > 0 {
		filled = int(float64(width) * float64(done) / float64(total))
	}
	bar := make([]byte, width)
	for i := range bar {
		bar[i] = '.'
		if i < filled {
			bar[i] = '#'
		}
	}
	return "[" + string(bar) + "]"
}

func isDir(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}

func isTerminal(f *os.File) bool {
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// writeFile writes through a temporary file and renames it, so a failure leaves no partial file.
func writeFile(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".report-*")
	if err != nil {
		return fmt.Errorf("--report %s: %w", path, writableError(path, err))
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// checkWritable reports why a file cannot be written at path (writeFile's way: a temporary
// file beside it, renamed over it), or nil when it can.
func checkWritable(path string) error {
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		return errors.New("is a directory: name a file, such as " + filepath.Join(path, "report.html"))
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".report-*")
	if err != nil {
		return writableError(path, err)
	}
	tmp.Close()
	return os.Remove(tmp.Name())
}

// writableError says, of the error creating a file beside path, what is wrong with path's
// directory.
func writableError(path string, err error) error {
	dir := filepath.Dir(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the directory %s does not exist", dir)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("the directory %s is not writable", dir)
	}
	return err
}

// simulateGCPercent is the garbage collector's target for a simulation: a short batch job
// whose heap is mostly the in-memory cluster, so collecting a quarter as often costs memory it
// can spare (a 10,000-pod day peaks under 1 GiB) and saves a fifth of the run.
const simulateGCPercent = 400

// simulateMemoryLimit caps what simulateGCPercent lets the heap grow to: past it the collector
// runs as often as it must. A 100,000-pod day's heap would otherwise grow to five times its
// live size, well past 4 GB.
const simulateMemoryLimit = 3 << 30

// tuneGC applies simulateGCPercent unless GOGC says otherwise, and simulateMemoryLimit unless
// GOMEMLIMIT does.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(simulateGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(simulateMemoryLimit)
	}
}
