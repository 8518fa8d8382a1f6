package simulate

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
)

const clusterDump = "../../examples/cluster/cluster-dump.yaml"

var (
	dumpOnce   sync.Once
	dumpReport *ClusterReport
	dumpErr    error
)

// dumpRun is the report of the checked-in dump, run once for the tests that only read it.
func dumpRun(t *testing.T) (*Cluster, *ClusterReport) {
	t.Helper()
	c, err := LoadClusterDump(clusterDump)
	if err != nil {
		t.Fatal(err)
	}
	dumpOnce.Do(func() { dumpReport, dumpErr = runCluster(c, ClusterOptions{}) })
	if dumpErr != nil {
		t.Fatal(dumpErr)
	}
	return c, dumpReport
}

func runCluster(c *Cluster, opts ClusterOptions) (*ClusterReport, error) {
	r, err := PrepareCluster(c, opts)
	if err != nil {
		return nil, err
	}
	return r.Run(context.Background())
}

// nodeOfPod is the node the dump's pod whose name starts with prefix runs on.
func nodeOfPod(t *testing.T, c *Cluster, prefix string) string {
	t.Helper()
	for _, p := range c.Pods {
		if strings.HasPrefix(p.Name, prefix) && p.Spec.NodeName != "" {
			return p.Spec.NodeName
		}
	}
	t.Fatalf("no pod %s* on a node in the dump", prefix)
	return ""
}

// removed are the nodes the consolidation steps remove.
func removed(rep *ClusterReport) map[string]bool {
	out := map[string]bool{}
	for _, s := range rep.Consolidation.Steps {
		for _, n := range s.Nodes {
			out[n] = true
		}
	}
	return out
}

func TestFromClusterDumpTodaysFleetIsTheCatalogsPrices(t *testing.T) {
	c, rep := dumpRun(t)
	prices, err := catalog.DefaultPrices()
	if err != nil {
		t.Fatal(err)
	}
	want := 0.0
	for _, n := range c.Nodes {
		capacity := n.Labels[karpv1.CapacityTypeLabelKey]
		if capacity == "" {
			capacity = karpv1.CapacityTypeOnDemand
		}
		p, ok := prices.Price(n.Labels[corev1.LabelInstanceTypeStable], n.Labels[corev1.LabelTopologyZone], capacity)
		if !ok {
			t.Fatalf("node %s: no catalog price", n.Name)
		}
		want += p
	}
	if rep.Today.Nodes != 13 || math.Abs(rep.Today.PerHour-want) > 1e-4 {
		t.Errorf("today: %d nodes at $%.4f/h, want 13 at $%.4f/h (the catalog's prices)", rep.Today.Nodes, rep.Today.PerHour, want)
	}
	if math.Abs(rep.Today.PerMonth-want*cloudprovider.HoursPerMonth) > 0.01 {
		t.Errorf("today: $%.2f/month, want %.2f", rep.Today.PerMonth, want*cloudprovider.HoursPerMonth)
	}
	sum, nodes := 0.0, 0
	for _, g := range rep.Today.Groups {
		sum += g.PerHour
		nodes += g.Nodes
	}
	if math.Abs(sum-rep.Today.PerHour) > 1e-3 || nodes != rep.Today.Nodes {
		t.Errorf("today's groups add up to %d nodes at $%.4f/h, the fleet is %d at $%.4f/h", nodes, sum, rep.Today.Nodes, rep.Today.PerHour)
	}
	if rep.Pods.Workload != 33 || rep.Pods.Pending != 1 || rep.Pods.Daemon != 26 {
		t.Errorf("pods %+v, want 33 workload pods (the succeeded one left out), 1 pending, 26 DaemonSet pods", rep.Pods)
	}
}

func TestFromClusterDumpConsolidation(t *testing.T) {
	c, rep := dumpRun(t)
	gone := removed(rep)
	big := nodeOfPod(t, c, "thumbnails-")
	if !gone[big] {
		t.Errorf("the underused m5.2xlarge %s was not consolidated; steps: %+v", big, rep.Consolidation.Steps)
	}
	var spot string
	for _, n := range c.Nodes {
		if n.Labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeSpot {
			spot = n.Name
		}
	}
	if !gone[spot] {
		t.Errorf("the empty spot node %s was not removed", spot)
	}
	for what, node := range map[string]string{"do-not-disrupt": nodeOfPod(t, c, "nightly-report-"), "PodDisruptionBudget (maxUnavailable 0)": nodeOfPod(t, c, "ledger-0")} {
		if gone[node] {
			t.Errorf("node %s, whose pod has a %s, was disrupted", node, what)
		}
		if !slices.ContainsFunc(rep.Consolidation.Fleet.Groups, func(g FleetGroup) bool {
			return g.InstanceType == "m5.xlarge" && g.CapacityType == karpv1.CapacityTypeOnDemand
		}) {
			t.Errorf("no on-demand m5.xlarge left, yet node %s (%s) must stay", node, what)
		}
	}
	for _, n := range c.Nodes {
		if n.Labels[karpv1.NodePoolLabelKey] == "" && gone[n.Name] {
			t.Errorf("node %s of the managed node group was disrupted without --adopt-nodes", n.Name)
		}
	}
	if rep.Consolidation.Unmanaged != 3 {
		t.Errorf("unmanaged %d, want 3", rep.Consolidation.Unmanaged)
	}
	if !rep.Consolidation.Settled || len(rep.Consolidation.Steps) == 0 {
		t.Errorf("settled %v after %d steps", rep.Consolidation.Settled, len(rep.Consolidation.Steps))
	}
	last := rep.Consolidation.Steps[len(rep.Consolidation.Steps)-1]
	if math.Abs(last.PerHourAfter-rep.Consolidation.Fleet.PerHour) > 1e-3 {
		t.Errorf("the last step leaves $%.4f/h, the final fleet costs $%.4f/h", last.PerHourAfter, rep.Consolidation.Fleet.PerHour)
	}
	if rep.Consolidation.Fleet.PerHour >= rep.Today.PerHour || rep.Consolidation.PendingPods != 0 {
		t.Errorf("consolidation: $%.4f/h (today $%.4f/h), %d pods pending", rep.Consolidation.Fleet.PerHour, rep.Today.PerHour, rep.Consolidation.PendingPods)
	}
	s := rep.Savings
	if math.Abs(s.ConsolidationPerHour-(rep.Today.PerHour-rep.Consolidation.Fleet.PerHour)) > 1e-3 ||
		math.Abs(s.FromScratchSavesHour-(rep.Today.PerHour-rep.FromScratch.Fleet.PerHour)) > 1e-3 {
		t.Errorf("savings %+v do not follow from the fleets", s)
	}
	if rep.FromScratch.Fleet.Nodes == 0 || rep.FromScratch.PendingPods != 0 {
		t.Errorf("from scratch: %d nodes, %d pods pending", rep.FromScratch.Fleet.Nodes, rep.FromScratch.PendingPods)
	}
	var text bytes.Buffer
	if err := WriteText(&text, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Today: 13 nodes", "Consolidation now:", "From scratch:", "after consolidation", "(unmanaged)"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
}

// TestFromClusterGuardsMatter holds the consolidation test to account: without the
// do-not-disrupt annotation and the PodDisruptionBudget, the same nodes are consolidated.
func TestFromClusterGuardsMatter(t *testing.T) {
	c, err := LoadClusterDump(clusterDump)
	if err != nil {
		t.Fatal(err)
	}
	dnd, ledger := nodeOfPod(t, c, "nightly-report-"), nodeOfPod(t, c, "ledger-0")
	for i := range c.Pods {
		delete(c.Pods[i].Annotations, karpv1.DoNotDisruptAnnotationKey)
	}
	c.PodDisruptionBudgets = slices.DeleteFunc(c.PodDisruptionBudgets, func(p policyv1.PodDisruptionBudget) bool { return p.Name == "ledger" })
	rep, err := runCluster(c, ClusterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gone := removed(rep)
	if !gone[dnd] && !gone[ledger] {
		t.Errorf("unguarded, neither %s nor %s was consolidated: the guards are not what keeps them", dnd, ledger)
	}
}

func TestFromClusterAdoptUnmanaged(t *testing.T) {
	c, err := LoadClusterDump(clusterDump)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := runCluster(c, ClusterOptions{AdoptUnmanaged: "default"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Consolidation.Unmanaged != 0 {
		t.Errorf("unmanaged %d with --adopt-nodes", rep.Consolidation.Unmanaged)
	}
	gone := removed(rep)
	adopted := 0
	for _, n := range c.Nodes {
		if n.Labels["eks.amazonaws.com/nodegroup"] != "" && gone[n.Name] {
			adopted++
		}
	}
	if adopted == 0 {
		t.Errorf("no node of the managed node group was consolidated once adopted: %+v", rep.Consolidation.Steps)
	}
	if _, err := PrepareCluster(c, ClusterOptions{AdoptUnmanaged: "nope"}); err == nil || !strings.Contains(err.Error(), "no such NodePool") {
		t.Errorf("--adopt-nodes of a missing NodePool: %v", err)
	}
}

func TestFromClusterUnknownInstanceType(t *testing.T) {
	c, err := LoadClusterDump(clusterDump)
	if err != nil {
		t.Fatal(err)
	}
	var odd string
	for i := range c.Nodes {
		if c.Nodes[i].Labels["eks.amazonaws.com/nodegroup"] != "" {
			odd = c.Nodes[i].Name
			c.Nodes[i].Labels[corev1.LabelInstanceTypeStable] = "x9.custom"
			break
		}
	}
	_, base := dumpRun(t)
	rep, err := runCluster(c, ClusterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Today.Unpriced, []string{odd}) || rep.Today.Nodes != 13 {
		t.Errorf("unpriced %v of %d nodes, want [%s] of 13", rep.Today.Unpriced, rep.Today.Nodes, odd)
	}
	if math.Abs(base.Today.PerHour-rep.Today.PerHour-0.096) > 1e-3 {
		t.Errorf("today $%.4f/h; with %s unpriced, want $%.4f/h less its m5.large's $0.096", rep.Today.PerHour, odd, base.Today.PerHour)
	}
	if !slices.Contains(rep.Consolidation.Fleet.Unpriced, odd) {
		t.Errorf("the unpriced node %s is not in the consolidated fleet's unpriced %v", odd, rep.Consolidation.Fleet.Unpriced)
	}
	var text bytes.Buffer
	if err := WriteText(&text, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "the catalog does not price ("+odd+")") {
		t.Errorf("the text does not name the unpriced node:\n%s", text.String())
	}
}

func TestFromClusterWithoutKarpenter(t *testing.T) {
	c, err := LoadClusterDump(clusterDump)
	if err != nil {
		t.Fatal(err)
	}
	c.Karpenter = nil
	if _, err := PrepareCluster(c, ClusterOptions{}); err == nil || !strings.Contains(err.Error(), "no NodePool") || !strings.Contains(err.Error(), "nodepool.yaml") {
		t.Fatalf("no NodePool and no file: %v", err)
	}
	rep, err := runCluster(c, ClusterOptions{NodePoolFiles: []string{"../../examples/cluster/nodepool.yaml"}})
	if err != nil {
		t.Fatal(err)
	}
	// The nodes' NodePool "default" is now the file's: they are managed by it again.
	if rep.NodePoolsFrom != "../../examples/cluster/nodepool.yaml" || rep.Consolidation.Unmanaged != 3 {
		t.Errorf("NodePools from %q, %d unmanaged", rep.NodePoolsFrom, rep.Consolidation.Unmanaged)
	}
	for _, g := range rep.FromScratch.Fleet.Groups {
		if g.CapacityType != karpv1.CapacityTypeOnDemand {
			t.Errorf("from scratch launched %s %s: the file's NodePool is on-demand only", g.InstanceType, g.CapacityType)
		}
	}
}

func TestFromClusterErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"broken.yaml", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: a\n", []string{"broken.yaml:"}},
		{"nonodes.yaml", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: a, namespace: default}\n  spec: {containers: [{name: c, image: x}]}\n", []string{"nonodes.yaml", "no Node", "kubectl get nodes,pods"}},
		{"dup.yaml", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: a}\n- apiVersion: v1\n  kind: Node\n  metadata: {name: a}\n", []string{"dup.yaml:9", "Duplicate value", "dup.yaml:4"}},
		{"badfield.yaml", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: a}\n  spec:\n    unschedulable: sometimes\n", []string{"badfield.yaml:8", "spec.unschedulable"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadClusterDump(write(tc.name, tc.text))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
	if _, err := LoadClusterDump(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing dump: %v", err)
	}
	c, err := LoadClusterDump(clusterDump)
	if err != nil {
		t.Fatal(err)
	}
	deployment := write("deploy.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: c, image: x}]}\n")
	if _, err := PrepareCluster(c, ClusterOptions{NodePoolFiles: []string{deployment}}); err == nil || !strings.Contains(err.Error(), "deploy.yaml:2") || !strings.Contains(err.Error(), "NodePools and EC2NodeClasses") {
		t.Errorf("a Deployment file with --from-cluster: %v", err)
	}
}

func TestFromClusterJSONMatchesSchema(t *testing.T) {
	_, rep := dumpRun(t)
	copied := *rep
	copied.Version = "test"
	var buf bytes.Buffer
	if err := WriteJSON(&buf, &copied); err != nil {
		t.Fatal(err)
	}
	schema := loadSchema(t)
	if errs := schema.validate(decodeJSON(t, buf.Bytes())); len(errs) > 0 {
		t.Errorf("the --from-cluster report does not match the schema:\n%s", strings.Join(errs[:min(len(errs), 20)], "\n"))
	}
}

func TestFromClusterIsDeterministic(t *testing.T) {
	c, rep := dumpRun(t)
	again, err := runCluster(c, ClusterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := WriteJSON(&a, rep); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&b, again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two runs of the same dump differ")
	}
}

// TestFromClusterLargeAndJSONDumps: a List larger than one input document may be (as a whole
// cluster's is) is read item by item, and a JSON dump (kubectl get -o json) names the lines of
// its items' fields.
func TestFromClusterLargeAndJSONDumps(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: n1\n    labels: {node.kubernetes.io/instance-type: m5.large}\n")
	pods := 0
	for b.Len() < 5<<20 {
		pods++
		fmt.Fprintf(&b, "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: pod-%d\n    namespace: default\n    labels: {app: web}\n    annotations: {note: %s}\n  spec:\n    nodeName: n1\n    containers:\n    - name: c\n      image: x\n      resources: {requests: {cpu: 10m}}\n", pods, strings.Repeat("x", 400))
	}
	b.WriteString("metadata: {resourceVersion: \"\"}\n")
	c, err := ParseClusterDump("big.yaml", []byte(b.String()))
	if err != nil {
		t.Fatalf("a %d MiB List: %v", b.Len()>>20, err)
	}
	if len(c.Nodes) != 1 || len(c.Pods) != pods {
		t.Errorf("read %d nodes and %d pods, want 1 and %d", len(c.Nodes), len(c.Pods), pods)
	}
	bad := strings.Replace(b.String(), "    nodeName: n1\n", "    nodeName: [n1]\n", 1)
	if _, err := ParseClusterDump("big.yaml", []byte(bad)); err == nil || !strings.Contains(err.Error(), "big.yaml:17: ") || !strings.Contains(err.Error(), "spec.nodeName") {
		t.Errorf("a bad field in a large List: %v", err)
	}

	js := "{\n  \"apiVersion\": \"v1\",\n  \"items\": [\n    {\n      \"apiVersion\": \"v1\",\n      \"kind\": \"Node\",\n      \"metadata\": {\"name\": \"a\"}\n    },\n    {\n      \"apiVersion\": \"v1\",\n      \"kind\": \"Node\",\n      \"metadata\": {\"name\": \"b\"},\n      \"spec\": {\"unschedulable\": \"sometimes\"}\n    }\n  ],\n  \"kind\": \"List\"\n}\n"
	if items, ok := jsonListItems([]byte(js)); !ok || len(items) != 2 || items[1].line != 9 {
		t.Errorf("json items %+v %v, want 2, the second at line 9", items, ok)
	}
	if _, err := ParseClusterDump("cluster.json", []byte(js)); err == nil || !strings.Contains(err.Error(), "cluster.json:13: ") || !strings.Contains(err.Error(), "spec.unschedulable") {
		t.Errorf("a bad field in a JSON dump: %v", err)
	}
	// Items that share a YAML anchor are read whole.
	anchors := "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: a\n    labels: &l {node.kubernetes.io/instance-type: m5.large}\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: b\n    labels: *l\n"
	if c, err := ParseClusterDump("anchors.yaml", []byte(anchors)); err != nil || len(c.Nodes) != 2 || c.Nodes[1].Labels[corev1.LabelInstanceTypeStable] != "m5.large" {
		t.Errorf("a List whose items share an anchor: %v", err)
	}
	data, err := os.ReadFile(clusterDump)
	if err != nil {
		t.Fatal(err)
	}
	if items, ok := yamlListItems(data); !ok || len(items) != 79 {
		t.Errorf("the checked-in dump splits into %d items (%v), want 79", len(items), ok)
	}
}

// BenchmarkFromClusterDump reads the checked-in dump and runs both simulations of it.
func BenchmarkFromClusterDump(b *testing.B) {
	for b.Loop() {
		c, err := LoadClusterDump(clusterDump)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := runCluster(c, ClusterOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFromClusterVolumesKeepTheirZone: a pod's claim bound to a zonal volume is taken in, so
// that when consolidation moves the pod, it goes to the volume's zone. The volume is put in a
// zone other than its pod's node's, where no node has room for the pod: without the volume the
// pod would move to the do-not-disrupt node's room, in another zone.
func TestFromClusterVolumesKeepTheirZone(t *testing.T) {
	c, err := LoadClusterDump(clusterDump)
	if err != nil {
		t.Fatal(err)
	}
	c.PodDisruptionBudgets = slices.DeleteFunc(c.PodDisruptionBudgets, func(p policyv1.PodDisruptionBudget) bool { return p.Name == "ledger" })
	const zone = "us-east-1a"
	for i := range c.Pods {
		if c.Pods[i].Name == "ledger-0" {
			c.Pods[i].Spec.Volumes = append(c.Pods[i].Spec.Volumes, corev1.Volume{Name: "data",
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-ledger-0"}}})
		}
	}
	waitForConsumer := storagev1.VolumeBindingWaitForFirstConsumer
	c.StorageClasses = append(c.StorageClasses, storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "gp3"}, Provisioner: "ebs.csi.aws.com", VolumeBindingMode: &waitForConsumer})
	class := "gp3"
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}
	c.Volumes = append(c.Volumes, corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-0a1b2c"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity: size, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: class,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "vol-0a1b2c"}},
			ClaimRef:               &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "payments", Name: "data-ledger-0"},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}}}},
		},
	})
	c.Claims = append(c.Claims, corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data-ledger-0", Namespace: "payments"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &class,
			VolumeName: "pvc-0a1b2c", Resources: corev1.VolumeResourceRequirements{Requests: size}},
	})
	r, err := PrepareCluster(c, ClusterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), r.workload(false), Options{})
	if err != nil {
		t.Fatal(err)
	}
	zones := map[string]string{}
	for _, n := range rep.NodeHistory {
		zones[n.Name] = n.Zone
	}
	original := nodeOfPod(t, c, "ledger-0")
	moved := 0
	for _, p := range rep.PodHistory {
		if p.Workload != "payments/ledger-0" || p.Node == "" || p.Node == original {
			continue
		}
		moved++
		if zones[p.Node] != zone {
			t.Errorf("pod %s moved to node %s in %s, not to its volume's zone %s", p.Name, p.Node, zones[p.Node], zone)
		}
	}
	if moved == 0 {
		t.Errorf("the ledger pod never moved off %s: nothing was tested", original)
	}
	if rep.Pods.NeverScheduled != 0 {
		t.Errorf("%d pods never scheduled: %+v", rep.Pods.NeverScheduled, rep.Pods.Unscheduled)
	}
}

// TestFromClusterKeepsNamespaces: the objects read from a cluster keep their namespaces and
// names in the simulation, so pod affinity terms, topology spread constraints and
// PodDisruptionBudgets are taken as they are and select the same pods as in the cluster.
func TestFromClusterKeepsNamespaces(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", Labels: map[string]string{"app": "web"}}, Spec: corev1.PodSpec{
		NodeName: "n1",
		Affinity: &corev1.Affinity{
			PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
				{LabelSelector: sel, TopologyKey: corev1.LabelHostname},
				{LabelSelector: sel, TopologyKey: corev1.LabelHostname, Namespaces: []string{"a", "b"}},
				{LabelSelector: sel, TopologyKey: corev1.LabelHostname, NamespaceSelector: &metav1.LabelSelector{}},
			}},
		},
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel}},
		Volumes:                   []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
	}}
	claim := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "shop"}}
	volume := corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: corev1.PersistentVolumeSpec{ClaimRef: &corev1.ObjectReference{Namespace: "shop", Name: "data"}}}
	pdb := policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Spec: policyv1.PodDisruptionBudgetSpec{Selector: sel}}
	node := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	r := &ClusterRun{cluster: &Cluster{Pods: []corev1.Pod{pod}, Claims: []corev1.PersistentVolumeClaim{claim}, Volumes: []corev1.PersistentVolume{volume},
		PodDisruptionBudgets: []policyv1.PodDisruptionBudget{pdb}}, nodes: []*adoptedNode{{node: &node}}, daemonSets: map[string]*appsv1.DaemonSet{}}
	r.translatePods()
	r.translateStorage()
	r.translateBudgets()
	if len(r.pods) != 1 || r.pods[0].namespace != "shop" || r.pods[0].name != "web-1" || r.pods[0].node != "n1" {
		t.Fatalf("pods %+v: want web-1 of shop on n1", r.pods)
	}
	tmpl := r.pods[0].template
	want := pod.Spec.DeepCopy()
	want.NodeName = ""
	if !equality.Semantic.DeepEqual(tmpl.Spec, *want) || !maps.Equal(tmpl.Labels, pod.Labels) {
		t.Errorf("template %+v %+v: want the pod's labels and spec, unbound", tmpl.Labels, tmpl.Spec)
	}
	w := r.workload(true)
	var deployed []string
	for _, ev := range w.Timeline {
		deployed = append(deployed, ev.Deploy.key())
	}
	var objects []string
	for _, o := range w.Objects {
		objects = append(objects, o.GetObjectKind().GroupVersionKind().Kind+" "+qualified(o.GetNamespace(), o.GetName()))
	}
	if !slices.Equal(deployed, []string{"shop/web-1"}) {
		t.Errorf("deployed %q, want shop/web-1", deployed)
	}
	if want := []string{"PersistentVolume pv-1", "PersistentVolumeClaim shop/data", "PodDisruptionBudget shop/web"}; !slices.Equal(objects, want) {
		t.Errorf("objects %q, want %q", objects, want)
	}
	for _, o := range w.Objects {
		switch o := o.(type) {
		case *policyv1.PodDisruptionBudget:
			if !equality.Semantic.DeepEqual(o.Spec.Selector, sel) {
				t.Errorf("budget selector %v, want the cluster's %v", o.Spec.Selector, sel)
			}
		case *corev1.PersistentVolume:
			if ref := o.Spec.ClaimRef; ref == nil || ref.Namespace != "shop" || ref.Name != "data" {
				t.Errorf("volume bound to %v, want shop/data", ref)
			}
		}
	}
	if len(sel.MatchExpressions) != 0 || pod.Spec.NodeName != "n1" {
		t.Error("the pod read was changed")
	}

	long := workloadName(strings.Repeat("p", 80))
	if len(long) > 63 || long == workloadName(strings.Repeat("p", 79)+"q") || strings.ContainsAny(long[len(long)-1:], ".-_") {
		t.Errorf("workloadName of a long name: %q", long)
	}
	if workloadName("web-1") != "web-1" {
		t.Errorf("workloadName(web-1) = %q", workloadName("web-1"))
	}
}
