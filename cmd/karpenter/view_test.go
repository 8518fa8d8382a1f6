package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
	"github.com/openkarpenter/karpenter/pkg/view"
)

// viewTestLabel marks this test's nodes and NodeClaims, so that --node-selector shows them
// alone whatever other tests of the package leave on the shared API server.
const viewTestLabel = "test.openkarpenter.io/view"

// viewCluster creates, on the test API server, nodes of every kind the view tells apart, their
// NodeClaims and their pods, and deletes them when the test ends.
func viewCluster(t *testing.T, ctx context.Context) {
	t.Helper()
	var created []client.Object
	t.Cleanup(func() {
		for _, obj := range created {
			if err := env.Client.Delete(context.Background(), obj, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
				t.Errorf("deleting %s: %v", obj.GetName(), err)
			}
		}
	})
	create := func(obj client.Object) {
		t.Helper()
		status := obj.DeepCopyObject().(client.Object)
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s: %v", obj.GetName(), err)
		}
		created = append(created, obj)
		// Write the status the create dropped, as a kubelet or a controller would.
		status.SetResourceVersion(obj.GetResourceVersion())
		status.SetUID(obj.GetUID())
		if err := env.Client.Status().Update(ctx, status); err != nil {
			t.Fatalf("writing the status of %s: %v", obj.GetName(), err)
		}
	}
	node := func(name, instanceType, capacityType, zone, nodePool, cpu, memory string) *corev1.Node {
		l := map[string]string{viewTestLabel: "true", corev1.LabelInstanceTypeStable: instanceType, corev1.LabelTopologyZone: zone}
		if capacityType != "" {
			l[karpv1.CapacityTypeLabelKey] = capacityType
		}
		if nodePool != "" {
			l[karpv1.NodePoolLabelKey] = nodePool
		}
		return builders.Node(name, l, builders.Resources("cpu", cpu, "memory", memory, "pods", "29"))
	}
	spot := node("view-spot", "m5.xlarge", karpv1.CapacityTypeSpot, "us-east-1b", "default", "3920m", "14Gi")
	spot.Spec.Unschedulable = true
	notReady := node("view-unknown", "x9.mystery", karpv1.CapacityTypeOnDemand, "us-east-1c", "default", "2", "4Gi")
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	for _, n := range []*corev1.Node{
		node("view-od", "m5.large", karpv1.CapacityTypeOnDemand, "us-east-1a", "default", "1930m", "7Gi"),
		spot,
		node("view-system", "t3.medium", "", "us-east-1a", "", "1930m", "3Gi"),
		notReady,
	} {
		create(n)
	}

	claim := func(name, nodeName string, requirements ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodeClaim {
		return &karpv1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{viewTestLabel: "true", karpv1.NodePoolLabelKey: "default"}},
			Spec: karpv1.NodeClaimSpec{
				Requirements: requirements,
				NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
			},
			Status: karpv1.NodeClaimStatus{NodeName: nodeName},
		}
	}
	in := func(key string, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
		return karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
	}
	create(claim("view-od-claim", "view-od", in(corev1.LabelInstanceTypeStable, "m5.large")))
	create(claim("view-launching", "", in(corev1.LabelInstanceTypeStable, "m5.2xlarge"), in(karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeOnDemand)))
	create(claim("view-launching-any", "", in(corev1.LabelInstanceTypeStable, "m5.large", "c5.large")))

	pod := func(name, nodeName, cpu, memory string, phase corev1.PodPhase) *corev1.Pod {
		p := builders.Pod(builders.PodOptions{Name: name, NodeName: nodeName, CPU: cpu, Memory: memory})
		p.UID = ""
		p.Status = corev1.PodStatus{Phase: phase}
		return p
	}
	for _, p := range []*corev1.Pod{
		pod("view-web-1", "view-od", "500m", "1Gi", corev1.PodRunning),
		pod("view-web-2", "view-od", "500m", "1Gi", corev1.PodRunning),
		pod("view-job-done", "view-od", "1", "4Gi", corev1.PodSucceeded),
		pod("view-cache", "view-spot", "2", "7Gi", corev1.PodRunning),
		pod("view-dns", "view-system", "100m", "70Mi", corev1.PodRunning),
		pod("view-waiting-1", "", "1", "1Gi", corev1.PodPending),
		pod("view-waiting-2", "", "1", "1Gi", corev1.PodPending),
	} {
		create(p)
	}
}

// runView runs `karpenter args...` as main does and returns what it printed.
func runView(t *testing.T, ctx context.Context, args ...string) (string, error) {
	t.Helper()
	root := newRootCommand()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	return out.String(), err
}

// viewLine returns the fields of the output's line for name.
func viewLine(t *testing.T, out, name string) []string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == name {
			return f
		}
	}
	t.Fatalf("no line for %s in:\n%s", name, out)
	return nil
}

func TestViewOnce(t *testing.T) {
	ctx := context.Background()
	viewCluster(t, ctx)
	// The NodePool of the nodes, for the packing ratio, unless another test left one.
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "default"}, &karpv1.NodePool{}); apierrors.IsNotFound(err) {
		np := builders.NodePool(builders.NodePoolOptions{Name: "default"})
		if err := env.Client.Create(ctx, np); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), np) })
	}
	kubeconfig, err := env.KubeconfigFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out, err := runView(t, ctx, "view", "--once", "--kubeconfig", kubeconfig, "--node-selector", viewTestLabel+"=true", "--sort", "name")
	if err != nil {
		t.Fatalf("view: %v\n%s", err, out)
	}
	t.Logf("output:\n%s", out)
	if strings.Contains(out, "\x1b") {
		t.Errorf("--once wrote escape codes")
	}

	prices, err := catalog.DefaultPrices()
	if err != nil {
		t.Fatal(err)
	}
	price := func(instanceType, zone, capacityType string) float64 {
		t.Helper()
		p, ok := prices.Price(instanceType, zone, capacityType)
		if !ok {
			t.Fatalf("no catalog price for %s %s %s", instanceType, zone, capacityType)
		}
		return p
	}
	odPrice := price("m5.large", "us-east-1a", karpv1.CapacityTypeOnDemand)
	spotPrice := price("m5.xlarge", "us-east-1b", karpv1.CapacityTypeSpot)
	systemPrice := price("t3.medium", "us-east-1a", karpv1.CapacityTypeOnDemand)
	launchingPrice := price("m5.2xlarge", "", karpv1.CapacityTypeOnDemand)
	p4 := func(v float64) string { return fmt.Sprintf("%.4f", v) }

	// NAME NODEPOOL TYPE CAPACITY ZONE $/HOUR CPU-bar CPU% MEMORY-bar MEMORY% PODS AGE STATE
	for _, tc := range []struct {
		name string
		want []string // by field; "" is not checked
	}{
		{"view-od", []string{"view-od", "default", "m5.large", "on-demand", "us-east-1a", p4(odPrice), "", "52%", "", "29%", "2/29", "", "Ready"}},
		{"view-spot", []string{"view-spot", "default", "m5.xlarge", "spot", "us-east-1b", p4(spotPrice), "", "51%", "", "50%", "1/29", "", "Cordoned"}},
		{"view-system", []string{"view-system", "(none)", "t3.medium", "-", "us-east-1a", p4(systemPrice), "", "5%", "", "2%", "1/29", "", "Ready"}},
		{"view-unknown", []string{"view-unknown", "default", "x9.mystery", "on-demand", "us-east-1c", "-", "", "0%", "", "0%", "0/29", "", "NotReady"}},
		{"view-launching", []string{"view-launching", "default", "m5.2xlarge", "on-demand", "-", p4(launchingPrice), "-", "-", "-", "", "Launching"}},
		{"view-launching-any", []string{"view-launching-any", "default", "?", "-", "-", "-", "-", "-", "-", "", "Launching"}},
	} {
		got := viewLine(t, out, tc.name)
		if len(got) != len(tc.want) {
			t.Errorf("%s: fields %q, want %d of them", tc.name, got, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if w != "" && got[i] != w {
				t.Errorf("%s: field %d is %q, want %q (line %q)", tc.name, i, got[i], w, got)
			}
		}
	}
	if strings.Contains(out, "view-od-claim") {
		t.Errorf("the registered NodeClaim has a line of its own")
	}

	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods); err != nil {
		t.Fatal(err)
	}
	pending := 0
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" && p.Status.Phase == corev1.PodPending {
			pending++
		}
	}
	total := odPrice + spotPrice + systemPrice + launchingPrice
	for _, want := range []string{
		fmt.Sprintf("Cost     $%.3f/hour  $%.2f/month  (2 rows without a price)", total, total*730),
		fmt.Sprintf("Nodes    4 nodes (1 not managed by Karpenter)  ·  2 launching  ·  %d pending pods", pending),
		"× the bound ($", // the packing ratio, on the cost line
		"3.1 of 9.78 cores requested",
		"9.1Gi of 28Gi requested",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("header lacks %q:\n%s", want, out)
		}
	}
	if pending < 2 {
		t.Errorf("%d pending pods, want at least this test's 2", pending)
	}

	// Another sort, and a selector that matches nothing.
	out, err = runView(t, ctx, "view", "--kubeconfig", kubeconfig, "--node-selector", viewTestLabel+"=true", "--sort", "price")
	if err != nil {
		t.Fatal(err)
	}
	if i, j := strings.Index(out, "view-launching "), strings.Index(out, "view-system "); i < 0 || j < 0 || i > j {
		t.Errorf("--sort price does not put the m5.2xlarge before the t3.medium:\n%s", out)
	}
	// eks-node-viewer's flags: other resources, extra labels, a sort by a computed label.
	out, err = runView(t, ctx, "view", "--kubeconfig", kubeconfig, "--node-selector", viewTestLabel+"=true",
		"--resources", "pods,cpu", "--extra-labels", "topology.kubernetes.io/zone,eks-node-viewer/node-memory-usage",
		"--node-sort", "eks-node-viewer/node-memory-usage=dsc")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("output:\n%s", out)
	for _, want := range []string{"4 of 116 pods", "3.1 of 9.78 cores requested"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	// The zone, a column of its own already, is not repeated.
	if got := viewLine(t, out, "NAME"); !slices.Equal(got, []string{"NAME", "NODEPOOL", "TYPE", "CAPACITY", "ZONE", "$/HOUR",
		"PODS", "CPU", "PODS", "AGE", "STATE", "NODE-MEMORY-USAGE"}) {
		t.Errorf("titles %q", got)
	}
	if strings.Contains(out, "Memory ") {
		t.Errorf("memory is shown, not asked for:\n%s", out)
	}
	// NAME NODEPOOL TYPE CAPACITY ZONE $/HOUR PODS-bar PODS% CPU-bar CPU% PODS AGE STATE MEMORY-USAGE
	if got := viewLine(t, out, "view-spot"); len(got) != 14 || got[7] != "3%" || got[9] != "51%" || got[10] != "1/29" ||
		got[4] != "us-east-1b" || got[13] != "50%" {
		t.Errorf("view-spot: fields %q, want 3%% of its pods, 51%% of its CPU, 1/29 pods, zone us-east-1b, 50%% of its memory", got)
	}
	order := []string{"view-spot", "view-od", "view-system", "view-unknown", "view-launching", "view-launching-any"}
	for i := 1; i < len(order); i++ {
		if strings.Index(out, order[i-1]+" ") > strings.Index(out, order[i]+" ") {
			t.Errorf("--node-sort eks-node-viewer/node-memory-usage=dsc: %s after %s, want %v:\n%s", order[i-1], order[i], order, out)
		}
	}
	out, err = runView(t, ctx, "view", "--kubeconfig", kubeconfig, "--node-selector", viewTestLabel+"=none")
	if err != nil || !strings.Contains(out, "Nodes    0 nodes  ·  0 launching") {
		t.Errorf("empty selection: %v\n%s", err, out)
	}
	// A resource no node has is refused (a misspelt one would show empty bars), naming theirs.
	_, err = runView(t, ctx, "view", "--kubeconfig", kubeconfig, "--node-selector", viewTestLabel+"=true", "--resources", "cpu,nvidia.com/gpu")
	var usage usageError
	if !errors.As(err, &usage) || !strings.HasPrefix(err.Error(), "--resources: no node has nvidia.com/gpu allocatable (the nodes shown have cpu, ") {
		t.Errorf("--resources cpu,nvidia.com/gpu on nodes without GPUs: got %v, want a usage error naming nvidia.com/gpu", err)
	}
}

func TestViewErrors(t *testing.T) {
	kubeconfig, err := env.KubeconfigFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  []string
		usage bool
		want  string
	}{
		{[]string{"--sort", "creation=up"}, true, `--node-sort: unknown sort order "up" in "creation=up": want asc or dsc, as in creation=dsc`},
		{[]string{"--node-sort", "price=desc"}, true, `--node-sort: unknown sort order "desc" in "price=desc": want asc or dsc`},
		{[]string{"--node-sort", "by price"}, true, `--node-sort: unknown sort "by price": want one of creation, price, name, cpu, memory, or a label key`},
		{[]string{"--resources", ""}, true, "--resources: no resources: want a comma-separated list such as cpu,memory,nvidia.com/gpu"},
		{[]string{"--resources", "cpu,cpu"}, true, `--resources: cpu is listed twice in "cpu,cpu"`},
		{[]string{"--resources", "cpu,nvidia.com//gpu"}, true, `--resources: "nvidia.com//gpu" is not a resource name`},
		{[]string{"--extra-labels", "topology.kubernetes.io/zone,"}, true, `--extra-labels: empty item in "topology.kubernetes.io/zone,"`},
		{[]string{"--extra-labels", "node pool"}, true, `--extra-labels: "node pool" is not a label key`},
		{[]string{"--extra-labels", "eks-node-viewer/node-a b-usage"}, true, `--extra-labels: eks-node-viewer/node-a b-usage: "a b" is not a resource name`},
		{[]string{"--node-selector", "a=b=c"}, true, "--node-selector"},
		{[]string{"--interval", "0s"}, true, "--interval 0s: must be positive"},
		{[]string{"--context", "nope"}, false, `context "nope" does not exist`},
		{[]string{"extra"}, false, "unknown command"},
	} {
		_, err := runView(t, context.Background(), append([]string{"view", "--once", "--kubeconfig", kubeconfig}, tc.args...)...)
		var usage usageError
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.As(err, &usage) != tc.usage {
			t.Errorf("view %v: error %v (usage %v), want %q (usage %v)", tc.args, err, errors.As(err, &usage), tc.want, tc.usage)
		}
	}
}

// TestViewLive runs the live view's path — informers, then frames redrawn in place — against
// the API server, and checks that a pod bound after the start shows in a later frame.
func TestViewLive(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	viewCluster(t, ctx)
	selector, err := labels.Parse(viewTestLabel + "=true")
	if err != nil {
		t.Fatal(err)
	}
	src, err := view.NewCacheSource(ctx, env.Config, selector)
	if err != nil {
		t.Fatal(err)
	}
	w := &frameWriter{frames: make(chan string, 100)}
	done := make(chan error, 1)
	go func() {
		done <- view.Watch(ctx, src, w, view.WatchOptions{Snapshot: view.Options{Selector: selector}, Interval: 20 * time.Millisecond})
	}()
	waitFor := func(what string) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case f := <-w.frames:
				if strings.Contains(f, what) {
					return
				}
			case <-timeout:
				t.Fatalf("no frame shows %q within 10s", what)
			}
		}
	}
	waitFor("4 nodes (1 not managed by Karpenter)  ·  2 launching")
	late := builders.Pod(builders.PodOptions{Name: "view-late", NodeName: "view-unknown", CPU: "1", Memory: "1Gi"})
	late.UID, late.Status = "", corev1.PodStatus{}
	if err := env.Client.Create(ctx, late); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), late, client.GracePeriodSeconds(0)) })
	waitFor("4.1 of 9.78 cores requested")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Watch: %v", err)
	}
	if !strings.HasSuffix(w.all.String(), "\x1b[?25h") {
		t.Errorf("the cursor is not shown again at the end")
	}
}

// frameWriter passes on each write (Watch writes a frame at a time) and keeps them all.
type frameWriter struct {
	mu     sync.Mutex
	all    strings.Builder
	frames chan string
}

func (w *frameWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all.Write(p)
	select {
	case w.frames <- string(p):
	default:
	}
	return len(p), nil
}
