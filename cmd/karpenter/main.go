// Command karpenter is the project's one binary: the in-cluster controller, the offline
// simulator, and converters from kOps, eksctl and legacy Karpenter objects. This package only
// parses flags and wires the domain packages under pkg/.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// exitCodeUsage is the exit code for bad input (flags, files, manifests).
const exitCodeUsage = 2

// usageError marks errors caused by what the user gave, which exit with exitCodeUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func main() {
	root := newRootCommand()
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		var usage usageError
		if errors.As(err, &usage) {
			os.Exit(exitCodeUsage)
		}
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "karpenter",
		Short: "A Kubernetes node autoscaler that speaks Karpenter's APIs",
		Long: `karpenter launches the cheapest nodes that fit pending pods and removes nodes that are
empty, underused, drifted or expired, honouring PodDisruptionBudgets. It reads Karpenter's
NodePool (karpenter.sh/v1) and EC2NodeClass (karpenter.k8s.aws/v1).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.Version = version
	root.SetVersionTemplate(versionLine() + "\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		newControllerCommand(),
		newSimulateCommand(),
		newConvertCommand(),
		newCRDsCommand(),
		newVersionCommand(),
		newViewCommand(),
	)
	return root
}

// notBuiltYet is what a subcommand whose capability has not landed returns.
func notBuiltYet(what string) error {
	return fmt.Errorf("%s is not built yet", what)
}
