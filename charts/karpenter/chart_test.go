// Package chart_test checks the Helm chart of the controller: it lints and renders, its values
// schema rejects typos with a message naming the field, what it renders applies to a real API
// server, the controller starts with the environment it sets, and (rbac_test.go) its RBAC
// rules are exactly those the controllers' calls need.
//
// The tests run bin/helm (`make helm`, hack/build-helm.sh) and the API server of
// pkg/test/apiserver (`make k8s-binaries`).
package chart_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/openkarpenter/karpenter/pkg/featuregate"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
	"github.com/openkarpenter/karpenter/pkg/test/harness"
)

var env *apiserver.Env

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m, &env)) }

// The release the tests render: `helm template karpenter . --namespace karpenter`.
const (
	release   = "karpenter"
	namespace = "karpenter"
)

// repoRoot is the repository root, two levels above the chart.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod in %s: the tests run from charts/karpenter", root)
	}
	return root
}

// helm runs bin/helm with args in the chart's folder and returns its stdout; a failure is
// returned with helm's stderr.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin := filepath.Join(repoRoot(t), "bin", "helm")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s not found: run `make helm` (hack/build-helm.sh)", bin)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// No user's Helm configuration, repositories or cache: a clean, hermetic run.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// render runs `helm template` of the release with the extra arguments (--set, -f) and returns
// the manifests.
func render(t *testing.T, args ...string) string {
	t.Helper()
	out, err := helm(t, append([]string{"template", release, ".", "--namespace", namespace}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// decode splits rendered manifests into objects.
func decode(t *testing.T, manifests string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifests), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := d.Decode(&u.Object); errors.Is(err, io.EOF) {
			return objs
		} else if err != nil {
			t.Fatalf("decoding the rendered manifests: %v", err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// find returns the rendered object of the kind, converted to out; it fails when there is not
// exactly one.
func find(t *testing.T, objs []*unstructured.Unstructured, kind string, out runtime.Object) {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d objects of kind %s rendered, want 1", len(found), kind)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(found[0].Object, out, true); err != nil {
		t.Fatalf("%s %s does not convert to its type: %v", kind, found[0].GetName(), err)
	}
}

// inNamespace are the objects of the namespace.
func inNamespace(objs []*unstructured.Unstructured, ns string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetNamespace() == ns {
			out = append(out, o)
		}
	}
	return out
}

func kinds(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind())
	}
	slices.Sort(out)
	return out
}

// envOf returns the container's environment: literal values, and "fieldRef:<path>" or
// "resourceFieldRef:<resource>" for the others.
func envOf(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			out[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil:
			out[e.Name] = "fieldRef:" + e.ValueFrom.FieldRef.FieldPath
		case e.ValueFrom.ResourceFieldRef != nil:
			out[e.Name] = "resourceFieldRef:" + e.ValueFrom.ResourceFieldRef.Resource
		}
	}
	return out
}

func TestLint(t *testing.T) {
	for _, args := range [][]string{
		{"--set", "settings.clusterName=lint"},
		{"-f", "testdata/values-aws.yaml"},
		{"--set", "cloudProvider=sim"},
		{"-f", upstreamHead, "--set", "settings.clusterName=lint"},
		{"-f", upstreamV1_0, "--set", "settings.clusterName=lint"},
	} {
		if out, err := helm(t, append([]string{"lint", ".", "--strict"}, args...)...); err != nil {
			t.Errorf("helm lint %v:\n%s%v", args, out, err)
		}
	}
}

// TestDefaults renders the default values (with the cluster name AWS requires): the objects of
// the release, two replicas on different nodes behind a budget of one, the hardened container
// with its probes, and Karpenter's defaults in the environment and the pod spec.
func TestDefaults(t *testing.T) {
	objs := decode(t, render(t, "--set", "settings.clusterName=test"))
	want := []string{"ClusterRole", "ClusterRoleBinding", "Deployment", "PodDisruptionBudget", "Role", "Role", "Role", "RoleBinding", "RoleBinding", "RoleBinding", "Service", "ServiceAccount"}
	if got := kinds(objs); !slices.Equal(got, want) {
		t.Errorf("rendered kinds %v, want %v", got, want)
	}
	for _, o := range objs {
		// The objects outside the release's namespace: read access to the cluster DNS Service,
		// in kube-system, as Karpenter's chart has it, and to the kube-scheduler's Lease (ours).
		if (o.GetName() == "karpenter-dns" || o.GetName() == "karpenter-scheduler-lease") && (o.GetKind() == "Role" || o.GetKind() == "RoleBinding") {
			if ns := o.GetNamespace(); ns != "kube-system" {
				t.Errorf("%s %s in namespace %q, want kube-system", o.GetKind(), o.GetName(), ns)
			}
			continue
		}
		if ns := o.GetNamespace(); ns != "" && ns != namespace {
			t.Errorf("%s %s in namespace %q, want %q", o.GetKind(), o.GetName(), ns, namespace)
		}
	}

	var d appsv1.Deployment
	find(t, objs, "Deployment", &d)
	pod := d.Spec.Template
	podLabels := labels.Set(pod.Labels)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas %v, want 2", d.Spec.Replicas)
	}
	if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err != nil || !sel.Matches(podLabels) {
		t.Errorf("the Deployment's selector %v does not select its pods %v", d.Spec.Selector, pod.Labels)
	}
	if got := pod.Spec.PriorityClassName; got != "system-cluster-critical" {
		t.Errorf("priorityClassName %q, want system-cluster-critical", got)
	}
	if pod.Spec.ServiceAccountName != release {
		t.Errorf("serviceAccountName %q, want %q", pod.Spec.ServiceAccountName, release)
	}

	// Replicas on different nodes, spread over zones, not on nodes Karpenter manages.
	anti := pod.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if len(anti) != 1 || anti[0].TopologyKey != corev1.LabelHostname {
		t.Fatalf("required pod anti-affinity %+v, want one term on %s", anti, corev1.LabelHostname)
	}
	if sel, err := metav1.LabelSelectorAsSelector(anti[0].LabelSelector); err != nil || !sel.Matches(podLabels) {
		t.Errorf("the anti-affinity term's selector %v does not select the pods %v", anti[0].LabelSelector, pod.Labels)
	}
	spreadKeys := []string{}
	for _, c := range pod.Spec.TopologySpreadConstraints {
		spreadKeys = append(spreadKeys, c.TopologyKey)
		if sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector); err != nil || !sel.Matches(podLabels) {
			t.Errorf("the spread over %s selects %v, not the pods %v", c.TopologyKey, c.LabelSelector, pod.Labels)
		}
	}
	// Karpenter's chart's defaults: spread over zones (hard), the CriticalAddonsOnly toleration,
	// Kubernetes' own termination grace period.
	if !slices.Equal(spreadKeys, []string{corev1.LabelTopologyZone}) || pod.Spec.TopologySpreadConstraints[0].WhenUnsatisfiable != corev1.DoNotSchedule {
		t.Errorf("topology spread %+v, want over zones, DoNotSchedule", pod.Spec.TopologySpreadConstraints)
	}
	if len(pod.Spec.Tolerations) != 1 || pod.Spec.Tolerations[0].Key != "CriticalAddonsOnly" || pod.Spec.Tolerations[0].Operator != corev1.TolerationOpExists {
		t.Errorf("tolerations %+v, want CriticalAddonsOnly Exists", pod.Spec.Tolerations)
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		t.Errorf("terminationGracePeriodSeconds %d, want unset (Kubernetes' 30s)", *pod.Spec.TerminationGracePeriodSeconds)
	}
	if pod.Spec.HostNetwork || pod.Spec.DNSPolicy != corev1.DNSClusterFirst || pod.Spec.SchedulerName != "default-scheduler" || len(pod.Spec.InitContainers) != 0 || len(pod.Spec.Volumes) != 0 {
		t.Errorf("hostNetwork %t dnsPolicy %q schedulerName %q, %d init containers, %d volumes: want Karpenter's defaults", pod.Spec.HostNetwork, pod.Spec.DNSPolicy, pod.Spec.SchedulerName, len(pod.Spec.InitContainers), len(pod.Spec.Volumes))
	}
	terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchExpressions) != 1 || terms[0].MatchExpressions[0].Key != "karpenter.sh/nodepool" ||
		terms[0].MatchExpressions[0].Operator != corev1.NodeSelectorOpDoesNotExist {
		t.Errorf("node affinity %+v, want karpenter.sh/nodepool DoesNotExist", terms)
	}

	var pdb policyv1.PodDisruptionBudget
	find(t, objs, "PodDisruptionBudget", &pdb)
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("budget maxUnavailable %v, want 1", pdb.Spec.MaxUnavailable)
	}
	if sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err != nil || !sel.Matches(podLabels) {
		t.Errorf("the budget's selector %v does not select the pods %v", pdb.Spec.Selector, pod.Labels)
	}

	var svc corev1.Service
	find(t, objs, "Service", &svc)
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "http-metrics" || svc.Spec.Ports[0].Port != 8080 {
		t.Errorf("service ports %+v, want http-metrics 8080", svc.Spec.Ports)
	}
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) {
		t.Errorf("the service selects %v, not the pods %v", svc.Spec.Selector, pod.Labels)
	}

	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	if c.Image != "karpenter:dev" || !slices.Equal(c.Args, []string{"controller"}) {
		t.Errorf("image %q args %v, want karpenter:dev (the appVersion) running `controller`", c.Image, c.Args)
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container security context %+v: want a read-only root, no privilege escalation, ALL capabilities dropped", sc)
	}
	if psc := pod.Spec.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Errorf("pod security context %+v: want runAsNonRoot", psc)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["http-metrics"] != 8080 || ports["http"] != 8081 {
		t.Errorf("container ports %v, want http-metrics 8080 and http 8081", ports)
	}
	for _, probe := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
		if probe.probe == nil || probe.probe.HTTPGet == nil || probe.probe.HTTPGet.Path != probe.path || probe.probe.HTTPGet.Port.String() != "http" {
			t.Errorf("%s probe %+v, want GET %s on the http (health) port", probe.name, probe.probe, probe.path)
		}
	}

	wantEnv := map[string]string{
		"CLOUD_PROVIDER":                      "aws",
		"LOG_LEVEL":                           "info",
		"LOG_OUTPUT_PATHS":                    "stdout",
		"LOG_ERROR_OUTPUT_PATHS":              "stderr",
		"METRICS_BIND_ADDRESS":                ":8080",
		"HEALTH_PROBE_BIND_ADDRESS":           ":8081",
		"LEADER_ELECTION_NAMESPACE":           "fieldRef:metadata.namespace",
		"CLUSTER_NAME":                        "test",
		"CLUSTER_ENDPOINT":                    "",
		"INTERRUPTION_QUEUE":                  "",
		"ISOLATED_VPC":                        "false",
		"VM_MEMORY_OVERHEAD_PERCENT":          "0.075",
		"RESERVED_ENIS":                       "0",
		"BATCH_IDLE_DURATION":                 "1s",
		"BATCH_MAX_DURATION":                  "10s",
		"PREFERENCE_POLICY":                   "Respect",
		"MIN_VALUES_POLICY":                   "Strict",
		"DISABLE_CLUSTER_STATE_OBSERVABILITY": "false",
		// As Karpenter v1.15's chart renders them.
		"KARPENTER_SERVICE":               "karpenter",
		"CPU_REQUESTS":                    "resourceFieldRef:requests.cpu",
		"MEMORY_LIMIT":                    "resourceFieldRef:limits.memory",
		"AMI_REFRESH_INTERVAL":            "1m",
		"SUBNET_REFRESH_INTERVAL":         "1m",
		"SECURITY_GROUP_REFRESH_INTERVAL": "1m",
		"IGNORE_DRA_REQUESTS":             "true",
		// Karpenter's defaults (pkg/featuregate).
		"FEATURE_GATES":     "CapacityBuffer=false,NodeOverlay=false,NodeRepair=false,PodDeletionCostManagement=false,RepackConsolidation=false,ReservedCapacity=true,SpotToSpotConsolidation=false,StaticCapacity=false,TerminateFirstDrift=false,TerminateFirstRepair=false",
		"AWS_FEATURE_GATES": "DRAEFA=false,DRANVIDIAGPU=false,NodeClassCEL=false,RebootForRepair=false",
		"GOMEMLIMIT":        "resourceFieldRef:limits.memory",
	}
	checkEnv(t, envOf(c), wantEnv)
}

// checkEnv compares a container's environment with the wanted one.
func checkEnv(t *testing.T, got, want map[string]string) {
	t.Helper()
	for name, v := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("env %s missing, want %q", name, v)
		} else if g != v {
			t.Errorf("env %s=%q, want %q", name, g, v)
		}
	}
	for name, v := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected env %s=%q", name, v)
		}
	}
}

// TestUserValues renders a values file like an EKS user's (testdata/values-aws.yaml): the IRSA
// role on the ServiceAccount, the settings in the environment, the feature gates as
// FEATURE_GATES, a pinned image, and a ServiceMonitor.
func TestUserValues(t *testing.T) {
	objs := decode(t, render(t, "-f", "testdata/values-aws.yaml"))
	var sa corev1.ServiceAccount
	find(t, objs, "ServiceAccount", &sa)
	if got := sa.Annotations["eks.amazonaws.com/role-arn"]; got != "arn:aws:iam::111122223333:role/KarpenterController-prod" {
		t.Errorf("ServiceAccount role-arn annotation %q", got)
	}
	if got := sa.Annotations["team"]; got != "platform" {
		t.Errorf("ServiceAccount lacks the additional annotation team=platform: %v", sa.Annotations)
	}
	var d appsv1.Deployment
	find(t, objs, "Deployment", &d)
	if *d.Spec.Replicas != 3 {
		t.Errorf("replicas %d, want 3", *d.Spec.Replicas)
	}
	if d.Labels["team"] != "platform" || d.Annotations["team"] != "platform" {
		t.Errorf("Deployment labels %v annotations %v: want the additional team=platform", d.Labels, d.Annotations)
	}
	pod := d.Spec.Template
	if pod.Annotations["prometheus.io/scrape"] != "false" {
		t.Errorf("pod annotations %v, want the podAnnotations", pod.Annotations)
	}
	c := pod.Spec.Containers[0]
	if want := "123456789012.dkr.ecr.us-west-2.amazonaws.com/karpenter@sha256:" + strings.Repeat("ab", 32); c.Image != want {
		t.Errorf("image %q, want %q (a digest pins the image)", c.Image, want)
	}
	if got := c.Resources.Limits.Memory().String(); got != "2Gi" {
		t.Errorf("memory limit %s, want 2Gi", got)
	}
	if len(pod.Spec.Tolerations) != 1 || pod.Spec.Tolerations[0].Key != "CriticalAddonsOnly" {
		t.Errorf("tolerations %+v, want CriticalAddonsOnly", pod.Spec.Tolerations)
	}
	checkEnv(t, envOf(c), map[string]string{
		"CLOUD_PROVIDER":                      "aws",
		"LOG_LEVEL":                           "debug",
		"LOG_OUTPUT_PATHS":                    "stdout",
		"LOG_ERROR_OUTPUT_PATHS":              "stderr",
		"METRICS_BIND_ADDRESS":                ":8080",
		"HEALTH_PROBE_BIND_ADDRESS":           ":8081",
		"LEADER_ELECTION_NAMESPACE":           "fieldRef:metadata.namespace",
		"CLUSTER_NAME":                        "prod",
		"CLUSTER_ENDPOINT":                    "https://ABCDEF0123456789.gr7.us-west-2.eks.amazonaws.com",
		"INTERRUPTION_QUEUE":                  "Karpenter-prod",
		"ISOLATED_VPC":                        "true",
		"VM_MEMORY_OVERHEAD_PERCENT":          "0.1",
		"RESERVED_ENIS":                       "1",
		"BATCH_IDLE_DURATION":                 "2s",
		"BATCH_MAX_DURATION":                  "20s",
		"PREFERENCE_POLICY":                   "Ignore",
		"MIN_VALUES_POLICY":                   "BestEffort",
		"DISABLE_CLUSTER_STATE_OBSERVABILITY": "false",
		"KARPENTER_SERVICE":                   "karpenter",
		"CPU_REQUESTS":                        "resourceFieldRef:requests.cpu",
		"MEMORY_LIMIT":                        "resourceFieldRef:limits.memory",
		"AMI_REFRESH_INTERVAL":                "1m",
		"SUBNET_REFRESH_INTERVAL":             "1m",
		"SECURITY_GROUP_REFRESH_INTERVAL":     "1m",
		"IGNORE_DRA_REQUESTS":                 "true",
		"FEATURE_GATES":                       "CapacityBuffer=false,NodeOverlay=false,NodeRepair=false,PodDeletionCostManagement=false,RepackConsolidation=false,ReservedCapacity=true,SpotToSpotConsolidation=true,StaticCapacity=false,TerminateFirstDrift=false,TerminateFirstRepair=false",
		"AWS_FEATURE_GATES":                   "DRAEFA=false,DRANVIDIAGPU=false,NodeClassCEL=false,RebootForRepair=false",
		"GOMEMLIMIT":                          "resourceFieldRef:limits.memory",
		"REGISTRATION_TTL":                    "10m",
	})
	var sm unstructured.Unstructured
	find(t, objs, "ServiceMonitor", &sm)
	if got := sm.GetLabels()["release"]; got != "prometheus" {
		t.Errorf("ServiceMonitor labels %v, want release=prometheus", sm.GetLabels())
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) != 1 {
		t.Fatalf("ServiceMonitor endpoints %v, want 1", endpoints)
	}
	ep := endpoints[0].(map[string]any)
	if ep["port"] != "http-metrics" || ep["interval"] != "30s" {
		t.Errorf("ServiceMonitor endpoint %v, want port http-metrics every 30s", ep)
	}
}

// TestFeatureGates renders settings.featureGates into FEATURE_GATES: Karpenter's defaults, a
// gate set on or off, every gate unset. The controller checks them (pkg/featuregate; cmd/karpenter
// TestControllerRefusesFeatureGates refuses NodeRepair=true).
func TestFeatureGates(t *testing.T) {
	const defaults = "CapacityBuffer=false,NodeOverlay=false,NodeRepair=false,PodDeletionCostManagement=false,RepackConsolidation=false,ReservedCapacity=true,SpotToSpotConsolidation=false,StaticCapacity=false,TerminateFirstDrift=false,TerminateFirstRepair=false"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, defaults},
		{[]string{"--set", "settings.featureGates.spotToSpotConsolidation=true"}, strings.Replace(defaults, "SpotToSpotConsolidation=false", "SpotToSpotConsolidation=true", 1)},
		{[]string{"--set", "settings.featureGates.nodeRepair=true"}, strings.Replace(defaults, "NodeRepair=false", "NodeRepair=true", 1)},
		{[]string{"--set", "settings.featureGates.capacityBuffer=true"}, strings.Replace(defaults, "CapacityBuffer=false", "CapacityBuffer=true", 1)},
		{[]string{"--set", "settings.featureGates.reservedCapacity=false"}, strings.Replace(defaults, "ReservedCapacity=true", "ReservedCapacity=false", 1)},
		{[]string{"--set", "settings.featureGates=null"}, ""},
	} {
		var d appsv1.Deployment
		find(t, decode(t, render(t, append(tc.args, "--set", "settings.clusterName=test", "--show-only", "templates/deployment.yaml")...)), "Deployment", &d)
		got := envOf(d.Spec.Template.Spec.Containers[0])["FEATURE_GATES"]
		if got != tc.want {
			t.Errorf("%v: FEATURE_GATES=%q, want %q", tc.args, got, tc.want)
		}
		// The controller starts with each of these: the gates they turn on work here.
		if _, err := featuregate.Karpenter.Parse(got); err != nil {
			t.Errorf("%v: the controller refuses FEATURE_GATES=%q: %v", tc.args, got, err)
		}
	}
}

// TestSimValues renders the simulated cloud: its state ConfigMap is in the environment and in
// the Role, and it goes when set empty.
func TestSimValues(t *testing.T) {
	for _, tc := range []struct {
		set       string
		configMap string
	}{
		{"cloudProvider=sim", "karpenter-sim-state"},
		{"cloudProvider=sim,sim.stateConfigMap=sim-instances", "sim-instances"},
		{"cloudProvider=sim,sim.stateConfigMap=", ""},
	} {
		objs := decode(t, render(t, "--set", tc.set))
		var d appsv1.Deployment
		find(t, objs, "Deployment", &d)
		env := envOf(d.Spec.Template.Spec.Containers[0])
		if env["CLOUD_PROVIDER"] != "sim" || env["SIM_STATE_CONFIGMAP"] != tc.configMap {
			t.Errorf("--set %s: CLOUD_PROVIDER=%q SIM_STATE_CONFIGMAP=%q, want sim and %q", tc.set, env["CLOUD_PROVIDER"], env["SIM_STATE_CONFIGMAP"], tc.configMap)
		}
		var role rbacv1.Role
		find(t, inNamespace(objs, namespace), "Role", &role)
		var granted []string
		for _, r := range role.Rules {
			if slices.Contains(r.Resources, "configmaps") {
				granted = append(granted, r.ResourceNames...)
			}
		}
		want := []string{tc.configMap}
		if tc.configMap == "" {
			want = nil
		}
		if !slices.Equal(granted, want) {
			t.Errorf("--set %s: the Role grants the ConfigMaps %v, want %v", tc.set, granted, want)
		}
	}
}

// TestSchemaRejects: values.schema.json turns a typo or a bad value into an error naming the
// field, before anything is rendered.
func TestSchemaRejects(t *testing.T) {
	for _, tc := range []struct {
		set  string
		want []string
	}{
		{"settings.clusterNmae=prod", []string{"/settings", "additional properties 'clusterNmae' not allowed"}},
		{"replica=3", []string{"additional properties 'replica' not allowed"}},
		{"replicas=two", []string{"/replicas", "got string, want integer"}},
		{"logLevel=verbose", []string{"/logLevel", "verbose"}},
		{"cloudProvider=gcp", []string{"/cloudProvider", "gcp"}},
		{"settings.vmMemoryOverheadPercent=7.5", []string{"/settings/vmMemoryOverheadPercent", "7.5"}},
		{"settings.batchIdleDuration=soon", []string{"/settings/batchIdleDuration", "soon"}},
		{"settings.reservedENIs=-1", []string{"/settings/reservedENIs"}},
		{"settings.featureGates.spotToSpotConsolidation=yes", []string{"/settings/featureGates/spotToSpotConsolidation", "got string, want boolean"}},
		{"settings.isolatedVPC=maybe", []string{"/settings/isolatedVPC"}},
		{"controller.image.digest=latest", []string{"/controller/image/digest"}},
		{"sim.stateConfigMap=Sim_State", []string{"/sim/stateConfigMap"}},
		{"serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn=null,serviceAccount.craete=true", []string{"/serviceAccount", "'craete'"}},
		// Karpenter's keys are accepted; a misspelt one is still refused, by name.
		{"settings.featureGates.nodeRepiar=true", []string{"/settings/featureGates", "'nodeRepiar'"}},
		{"settings.awsFeatureGates.nodeClassCel=true", []string{"/settings/awsFeatureGates", "'nodeClassCel'"}},
		{"controller.securityContext.runAsUser=0", []string{"/controller/securityContext", "'runAsUser'"}},
		{"webhook.enable=true", []string{"/webhook", "'enable'"}},
		{"serviceMonitor.sampleLimit=-1", []string{"/serviceMonitor/sampleLimit"}},
		{"dnsPolicy=ClusterLast", []string{"/dnsPolicy", "ClusterLast"}},
		{"settings.amiRefreshInterval=often", []string{"/settings/amiRefreshInterval", "often"}},
		{"controller.imagePullPolicy=Always", []string{"/controller", "'imagePullPolicy'"}},
	} {
		_, err := helm(t, "template", release, ".", "--set", tc.set)
		if err == nil {
			t.Errorf("--set %s rendered; want the schema to reject it", tc.set)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "don't meet the specifications of the schema") {
			t.Errorf("--set %s: not a schema error:\n%s", tc.set, msg)
		}
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("--set %s: the error does not mention %q:\n%s", tc.set, w, msg)
			}
		}
	}
}

// TestServerDryRun applies what the chart renders, CRDs included, to a real API server with
// `kubectl apply --dry-run=server`: every object passes the server's validation.
func TestServerDryRun(t *testing.T) {
	ensureNamespace(t, namespace)
	dir := t.TempDir()
	kubeconfig, err := env.KubeconfigFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--set", "settings.clusterName=test"},
		{"-f", "testdata/values-aws.yaml", "--set", "serviceMonitor.enabled=false"}, // no Prometheus Operator CRDs here
		{"--set", "cloudProvider=sim,replicas=1"},
		// Karpenter's own values files, and every key that changes the pod spec at once.
		{"-f", upstreamHead, "--set", "settings.clusterName=test"},
		{"-f", upstreamV1_0, "--set", "settings.clusterName=test"},
		{"-f", "testdata/values-upstream-keys.yaml"},
	} {
		manifests := render(t, append([]string{"--include-crds"}, args...)...)
		cmd := exec.Command(env.KubectlPath, "--kubeconfig", kubeconfig, "apply", "--dry-run=server", "-f", "-")
		cmd.Stdin = strings.NewReader(manifests)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Errorf("values %v: kubectl apply --dry-run=server: %v\n%s%s", args, err, stdout.String(), stderr.String())
			continue
		}
		// One line per object, CRDs included ("configured": the API server has them already).
		if got, want := strings.Count(stdout.String(), "(server dry run)"), len(decode(t, manifests)); got != want {
			t.Errorf("values %v: kubectl applied %d objects, want %d:\n%s", args, got, want, stdout.String())
		}
	}
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// TestCRDsInSync: the chart's crds/ are the generated CRDs of config/crd (`make generate`
// copies them; `make verify` fails when they differ).
func TestCRDsInSync(t *testing.T) {
	generated, err := filepath.Glob(filepath.Join(repoRoot(t), "config", "crd", "*.yaml"))
	if err != nil || len(generated) == 0 {
		t.Fatalf("no CRDs in config/crd: %v", err)
	}
	inChart, err := filepath.Glob("crds/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	names := func(paths []string) []string {
		out := make([]string, len(paths))
		for i, p := range paths {
			out[i] = filepath.Base(p)
		}
		return out
	}
	if !slices.Equal(names(generated), names(inChart)) {
		t.Fatalf("crds/ holds %v, config/crd %v: run make generate", names(inChart), names(generated))
	}
	for _, p := range generated {
		want, err1 := os.ReadFile(p)
		got, err2 := os.ReadFile(filepath.Join("crds", filepath.Base(p)))
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("crds/%s differs from config/crd: run make generate", filepath.Base(p))
		}
	}
}

// TestContainerEnvironment runs the controller binary with exactly the environment the chart
// gives its container (cloudProvider=sim, against the test API server, ports moved to free
// ones): every variable is one the binary reads (its --help names them), the values parse, and
// the controller becomes ready on the probes' port and paths.
func TestContainerEnvironment(t *testing.T) {
	// Its own namespace for the leader election Lease, apart from the other tests' controllers.
	const envNamespace = "karpenter-env"
	ensureNamespace(t, envNamespace)
	dir := t.TempDir()
	bin := filepath.Join(dir, "karpenter")
	build := exec.Command("go", "build", "-o", bin, "./cmd/karpenter")
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building karpenter: %v\n%s", err, out)
	}
	help, err := exec.Command(bin, "controller", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("karpenter controller --help: %v\n%s", err, help)
	}
	read := map[string]bool{}
	for _, m := range regexp.MustCompile(`\(([A-Z][A-Z0-9_]+)\)`).FindAllStringSubmatch(string(help), -1) {
		read[m[1]] = true
	}

	metrics, health := harness.FreePort(t), harness.FreePort(t)
	var d appsv1.Deployment
	find(t, decode(t, render(t, "--set", fmt.Sprintf("cloudProvider=sim,controller.metrics.port=%d,controller.healthProbe.port=%d,settings.batchIdleDuration=200ms", metrics, health),
		"--show-only", "templates/deployment.yaml")), "Deployment", &d)
	c := d.Spec.Template.Spec.Containers[0]
	kubeconfig, err := env.KubeconfigFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	environ := []string{"KUBECONFIG=" + kubeconfig, "HOME=" + dir}
	for _, e := range c.Env {
		switch {
		case e.Name == "GOMEMLIMIT":
			// Read by the Go runtime, not by a flag; the kubelet resolves it to bytes.
			environ = append(environ, "GOMEMLIMIT=1073741824")
		case !read[e.Name]:
			t.Errorf("the chart sets %s, which `karpenter controller` does not read", e.Name)
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			environ = append(environ, e.Name+"="+envNamespace)
		case e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "requests.cpu":
			environ = append(environ, e.Name+"=1000") // the kubelet resolves it to millicores (divisor 1m)
		case e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "limits.memory":
			environ = append(environ, e.Name+"=1073741824") // and this one to bytes
		case e.ValueFrom != nil:
			t.Errorf("env %s: a valueFrom the test does not resolve", e.Name)
		default:
			environ = append(environ, e.Name+"="+e.Value)
		}
	}
	cmd := exec.Command(bin, c.Args...)
	cmd.Env = environ
	logs, err := os.Create(filepath.Join(dir, "controller.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if t.Failed() {
			data, _ := os.ReadFile(logs.Name())
			t.Logf("controller log:\n%s", data)
		}
	}()
	probe := func(path string) error {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", health, path))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", path, resp.Status)
		}
		return nil
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := errors.Join(probe("/readyz"), probe("/healthz"))
		if err == nil {
			break
		}
		select {
		case werr := <-exited:
			t.Fatalf("the controller exited (%v) before it was ready", werr)
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("not ready within 30s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("/metrics on the metrics port: %v %v", resp, err)
	}
	if resp != nil {
		resp.Body.Close()
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("controller exited with %v after SIGTERM", err)
		}
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("controller did not stop within 15s of SIGTERM")
	}
}
