package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

const clusterDumpExample = "../../examples/cluster/cluster-dump.yaml"

// clusterKinds are the kinds the dump holds, purged before and after the live test so that
// it reads its own objects alone.
func clusterKinds() []client.ObjectList {
	return []client.ObjectList{&karpv1.NodeClaimList{}, &karpv1.NodePoolList{}, &awsv1.EC2NodeClassList{}, &policyv1.PodDisruptionBudgetList{},
		&appsv1.DaemonSetList{}, &corev1.NodeList{}}
}

var clusterNamespaces = []string{"default", "kube-system", "shop", "analytics", "payments", "karpenter"}

// applyDump creates the objects of a dump on the test API server, with their status, as the
// cluster it was taken from had them.
func applyDump(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []map[string]any `json:"items"`
	}
	if err := sigsyaml.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	for _, ns := range clusterNamespaces {
		err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	for _, item := range list.Items {
		obj := &unstructured.Unstructured{Object: item}
		status, hasStatus := item["status"]
		for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "generation"} {
			unstructured.RemoveNestedField(obj.Object, "metadata", f)
		}
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
		if !hasStatus {
			continue
		}
		obj.Object["status"] = status
		if err := env.Client.Status().Update(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("writing the status of %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
}

// reportWithoutSource is a --from-cluster JSON report with its source blanked, to compare
// reports of the same objects read from different places.
func reportWithoutSource(t *testing.T, out string) string {
	t.Helper()
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	rep["source"] = ""
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestSimulateFromLiveCluster puts the checked-in dump's cluster on a running API server and
// simulates it live, as a user with read-only rights: the report is the one of the checked-in
// dump, and of a dump kubectl takes of the server.
func TestSimulateFromLiveCluster(t *testing.T) {
	ctx := context.Background()
	env.Purge(t, clusterKinds(), clusterNamespaces...)
	t.Cleanup(func() { env.Purge(t, clusterKinds(), clusterNamespaces...) })
	applyDump(t, ctx, clusterDumpExample)

	// A user who may only get, list and watch.
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "simulate-read-only"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "simulate-read-only"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "simulate-readers"}}}
	for _, obj := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
	dir := t.TempDir()
	readOnly, err := env.UserKubeconfigFile(dir, "simulate", "simulate-readers")
	if err != nil {
		t.Fatal(err)
	}
	// The read-only user cannot write: the role is what the test says it is.
	cfgOut, err := exec.Command(env.KubectlPath, "--kubeconfig", readOnly, "create", "namespace", "simulate-write-probe").CombinedOutput()
	if err == nil || !strings.Contains(string(cfgOut), "forbidden") {
		t.Fatalf("the read-only user could create a namespace: %v: %s", err, cfgOut)
	}

	live, err := runView(t, ctx, "simulate", "--from-cluster", "--kubeconfig", readOnly, "-o", "json")
	if err != nil {
		t.Fatalf("simulate --from-cluster: %v", err)
	}
	if !strings.Contains(live, `"source": "context `) {
		t.Errorf("the live report does not name the context it read:\n%.400s", live)
	}
	checkedIn, err := runView(t, ctx, "simulate", "--from-cluster="+clusterDumpExample, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := reportWithoutSource(t, live), reportWithoutSource(t, checkedIn); a != b {
		t.Errorf("the live cluster's report differs from the checked-in dump's:\nlive:\n%s\ndump:\n%s", a, b)
	}

	// A dump kubectl takes of the same server gives the same report.
	admin, err := env.KubeconfigFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(env.KubectlPath, "--kubeconfig", admin, "get", "nodes,pods,daemonsets,pdb,pvc,pv,storageclasses,nodepools,ec2nodeclasses,nodeclaims", "-A", "-o", "yaml")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	dump, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl get: %v: %s", err, stderr.String())
	}
	dumpPath := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(dumpPath, dump, 0o600); err != nil {
		t.Fatal(err)
	}
	fromDump, err := runView(t, ctx, "simulate", "--from-cluster="+dumpPath, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := reportWithoutSource(t, live), reportWithoutSource(t, fromDump); a != b {
		t.Errorf("the live cluster's report differs from that of kubectl's dump of it:\nlive:\n%s\nkubectl dump:\n%s", a, b)
	}
}

func TestSimulateFromClusterUsageErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.yaml")
	if err := os.WriteFile(empty, []byte("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: a, namespace: default}\n  spec: {containers: [{name: c, image: x}]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	noPools := filepath.Join(dir, "no-nodepools.yaml")
	data, err := os.ReadFile(clusterDumpExample)
	if err != nil {
		t.Fatal(err)
	}
	// The dump without its NodePool and EC2NodeClass: the cluster of a managed node group.
	text := string(data)
	text = text[:strings.Index(text, "- apiVersion: karpenter.sh/v1")]
	if err := os.WriteFile(noPools, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"missing dump", []string{"--from-cluster=" + filepath.Join(dir, "nope.yaml")}, []string{"nope.yaml"}},
		{"no nodes", []string{"--from-cluster=" + empty}, []string{"empty.yaml", "no Node"}},
		{"no nodepools", []string{"--from-cluster=" + noPools}, []string{"no-nodepools.yaml", "no NodePool", "pass NodePool and EC2NodeClass files"}},
		{"kubeconfig with a dump", []string{"--from-cluster=" + noPools, "--kubeconfig", "x"}, []string{"--kubeconfig", "live cluster"}},
		{"cluster flag alone", []string{"examples/web.yaml", "--adopt-nodes", "default"}, []string{"--adopt-nodes: only with --from-cluster"}},
		{"no argument", nil, []string{"--from-cluster"}},
		{"report page in a missing directory", []string{"--from-cluster=" + noPools, "--report", filepath.Join(dir, "missing", "r.html")}, []string{"--report", "does not exist"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runView(t, ctx, append([]string{"simulate"}, tc.args...)...)
			var usage usageError
			if err == nil || !errors.As(err, &usage) {
				t.Fatalf("want a usage error (exit 2), got %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
	// With the NodePool file, the same cluster simulates; --report writes its page.
	page := filepath.Join(dir, "cluster.html")
	out, err := runView(t, ctx, "simulate", "--from-cluster="+noPools, "../../examples/cluster/nodepool.yaml", "--adopt-nodes", "default", "--report", page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NodePools: ../../examples/cluster/nodepool.yaml", "Today: 13 nodes", "Consolidation now:", "Savings", "Report page: " + page} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<h2>Today: 13 nodes", "<h2>Consolidation now:", "<h2>From scratch:", "after consolidation<b>$"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("the page lacks %q:\n%.600s", want, html)
		}
	}
}
