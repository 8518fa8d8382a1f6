package main

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// TestVersionFlag: `karpenter --version` prints what `karpenter version` prints.
func TestVersionFlag(t *testing.T) {
	flag, _, err := run(t, "", "--version")
	if err != nil {
		t.Fatalf("karpenter --version: %v", err)
	}
	command, _, err := run(t, "", "version")
	if err != nil {
		t.Fatalf("karpenter version: %v", err)
	}
	if flag != command || !strings.HasPrefix(flag, "karpenter "+version+" (revision ") {
		t.Errorf("karpenter --version printed %q, karpenter version %q", flag, command)
	}
}

// TestSimulateReportPathCheckedFirst: a --report page that cannot be written fails before the
// run, naming the path and what is wrong with it.
func TestSimulateReportPathCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ path, want string }{
		{dir + "/missing/report.html", "--report " + dir + "/missing/report.html: the directory " + dir + "/missing does not exist"},
		{dir, "--report " + dir + ": is a directory: name a file, such as " + dir + "/report.html"},
	} {
		_, _, err := run(t, "", "simulate", "../../examples/web.yaml", "--report", tc.path)
		var usage usageError
		if !errors.As(err, &usage) || err.Error() != tc.want {
			t.Errorf("--report %s: got %v, want the usage error %q", tc.path, err, tc.want)
		}
	}
}

// TestFlagValuesComplete: the shell completes the flags that take one of a few values with
// those values (cobra's __complete, which the completion scripts call).
func TestFlagValuesComplete(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"simulate", "--output", ""}, []string{"text", "json"}},
		{[]string{"view", "--node-sort", ""}, []string{"creation", "price", "name", "cpu", "memory"}},
		{[]string{"controller", "--cloud-provider", ""}, []string{"sim", "aws"}},
		{[]string{"controller", "--log-level", ""}, []string{"debug", "info", "error"}},
	} {
		stdout, _, err := run(t, "", append([]string{"__complete"}, tc.args...)...)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		got := strings.Split(stdout, "\n")
		for _, want := range tc.want {
			if !slices.Contains(got, want) {
				t.Errorf("%v completes %q, want %q among them", tc.args, got, want)
			}
		}
	}
}

// TestViewNodeSelectorCompletes: view's --node-selector completes with the cluster's NodePools
// and nodes, read with --kubeconfig, keeping the selectors already typed.
func TestViewNodeSelectorCompletes(t *testing.T) {
	ctx := context.Background()
	kubeconfig, err := env.KubeconfigFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	np := builders.NodePool(builders.NodePoolOptions{Name: "completion-pool"})
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "completion-node", Labels: map[string]string{corev1.LabelHostname: "completion-node"}}}
	for _, o := range []client.Object{np, node} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(ctx, o) })
	}
	stdout, _, err := run(t, "", "__complete", "view", "--kubeconfig", kubeconfig, "--node-selector", "topology.kubernetes.io/zone=a,")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(stdout, "\n")
	for _, want := range []string{"topology.kubernetes.io/zone=a,karpenter.sh/nodepool=completion-pool", "topology.kubernetes.io/zone=a,kubernetes.io/hostname=completion-node"} {
		if !slices.Contains(got, want) {
			t.Errorf("--node-selector completes %q, want %q among them", got, want)
		}
	}
}
