package chart_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	karpv1alpha1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/openkarpenter/karpenter/pkg/operator"
	"github.com/openkarpenter/karpenter/pkg/providers/aws/fake"
	"github.com/openkarpenter/karpenter/pkg/test/harness"
)

// apiCall is one request to the API server, as RBAC sees it.
type apiCall struct {
	Verb, Group, Resource, Subresource, Namespace, Name string
}

func (c apiCall) String() string {
	r := c.Resource
	if c.Subresource != "" {
		r += "/" + c.Subresource
	}
	if c.Group != "" {
		r += "." + c.Group
	}
	where := c.Name
	if c.Namespace != "" {
		where = c.Namespace + "/" + c.Name
	}
	return fmt.Sprintf("%s %s %s", c.Verb, r, where)
}

// callRecorder wraps a client's transport and records every resource request it sends, and
// every one the server refused with 403 Forbidden.
type callRecorder struct {
	mu       sync.Mutex
	calls    map[apiCall]int
	refused  map[string]int
	resolver *request.RequestInfoFactory
}

func newCallRecorder() *callRecorder {
	return &callRecorder{
		calls:    map[apiCall]int{},
		refused:  map[string]int{},
		resolver: &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")},
	}
}

// wrap is a rest.Config WrapTransport.
func (r *callRecorder) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		info, ierr := r.resolver.NewRequestInfo(req)
		if ierr != nil {
			return resp, err
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		// What the API server's authorizer sees: a request to a collection (create, list,
		// watch) has no name, so a rule's resourceNames cannot cover it.
		call := apiCall{Verb: info.Verb, Group: info.APIGroup, Resource: info.Resource, Subresource: info.Subresource, Namespace: info.Namespace, Name: info.Name}
		if resp != nil && resp.StatusCode == http.StatusForbidden {
			what := call.String()
			if !info.IsResourceRequest {
				what = req.Method + " " + info.Path
			}
			r.refused[what]++
		}
		if info.IsResourceRequest {
			r.calls[call]++
		}
		return resp, err
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// snapshot returns the calls recorded so far and the refused ones.
func (r *callRecorder) snapshot() (map[apiCall]int, map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.calls), maps.Clone(r.refused)
}

// grant is one permission of a rule: a verb on a resource (with its subresource) of a group,
// in a namespace for a Role's rules, on the named objects when the rule names them.
type grant struct {
	Role      string // "ClusterRole" or "Role"
	Namespace string // a Role's namespace
	Group     string
	Resource  string // "pods" or "pods/eviction"
	Verb      string
	Names     []string
}

func (g grant) String() string {
	s := fmt.Sprintf("%s: %s %s", g.Role, g.Verb, g.Resource)
	if g.Group != "" {
		s += "." + g.Group
	}
	if len(g.Names) > 0 {
		s += " " + strings.Join(g.Names, ",")
	}
	return s
}

// allows reports whether the grant covers the call.
func (g grant) allows(c apiCall) bool {
	resource := c.Resource
	if c.Subresource != "" {
		resource += "/" + c.Subresource
	}
	return (g.Group == c.Group || g.Group == "*") && (g.Resource == resource || g.Resource == "*") &&
		(g.Verb == c.Verb || g.Verb == "*") && (g.Role == "ClusterRole" || g.Namespace == c.Namespace) &&
		(len(g.Names) == 0 || slices.Contains(g.Names, c.Name))
}

// grants flattens the rules of a role into grants.
func grants(kind, ns string, rules []rbacv1.PolicyRule) []grant {
	var out []grant
	for _, rule := range rules {
		for _, group := range rule.APIGroups {
			for _, res := range rule.Resources {
				for _, verb := range rule.Verbs {
					out = append(out, grant{Role: kind, Namespace: ns, Group: group, Resource: res, Verb: verb, Names: rule.ResourceNames})
				}
			}
		}
	}
	return out
}

// simOnly are the permissions only the simulated cloud needs: its in-process kubelets register
// the Nodes of its instances and report their status (the pods' status, which they also write,
// every cloud patches: a pod's nominated node); it
// keeps its instances in a ConfigMap of the release's namespace. The chart grants them with
// cloudProvider=sim only.
var simOnly = []string{
	"ClusterRole: create nodes",
	"ClusterRole: patch nodes/status",
	"Role: create configmaps",
	"Role: get configmaps karpenter-sim-state",
	"Role: update configmaps karpenter-sim-state",
}

// awsOnly are the permissions only the AWS cloud needs: the EC2NodeClass controller adds and
// removes its finalizer (the instance profile and launch templates it made are deleted first)
// and writes its hash; the operator reads the cluster DNS Service's address for nodes' kubelets.
var awsOnly = []string{
	"ClusterRole: patch ec2nodeclasses.karpenter.k8s.aws",
	"Role: get services kube-dns",
}

// unreached are the chart's permissions that no run of TestRBACMatchesCalls can reach, each
// with the code path that needs it. Empty: every permission is exercised. A permission goes
// here only when driving its path in the test is impossible.
var unreached = map[string]string{}

// chartRBAC is a rendering's RBAC: the objects to apply and their flattened grants, and the
// controller's environment.
type chartRBAC struct {
	objects []*unstructured.Unstructured
	grants  []grant
	account string // the ServiceAccount's user name
	env     map[string]string
}

func renderRBAC(t *testing.T, args ...string) chartRBAC {
	t.Helper()
	objs := decode(t, render(t, args...))
	var clusterRole rbacv1.ClusterRole
	var sa corev1.ServiceAccount
	var d appsv1.Deployment
	find(t, objs, "ClusterRole", &clusterRole)
	find(t, objs, "ServiceAccount", &sa)
	find(t, objs, "Deployment", &d)
	out := chartRBAC{
		grants:  grants("ClusterRole", "", clusterRole.Rules),
		account: fmt.Sprintf("system:serviceaccount:%s:%s", sa.Namespace, sa.Name),
		env:     envOf(d.Spec.Template.Spec.Containers[0]),
	}
	// Roles: the release namespace's, and (aws) kube-system's for the cluster DNS Service.
	for _, o := range objs {
		if o.GetKind() != "Role" {
			continue
		}
		var role rbacv1.Role
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
			t.Fatal(err)
		}
		out.grants = append(out.grants, grants("Role", role.Namespace, role.Rules)...)
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			out.objects = append(out.objects, o)
		}
	}
	return out
}

// apply creates the RBAC objects, or replaces those that exist.
func (c chartRBAC) apply(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, o := range c.objects {
		obj := o.DeepCopy()
		err := env.Client.Create(ctx, obj)
		if apierrors.IsAlreadyExists(err) {
			existing := o.DeepCopy()
			if err = env.Client.Get(ctx, client.ObjectKeyFromObject(o), existing); err == nil {
				obj.SetResourceVersion(existing.GetResourceVersion())
				err = env.Client.Update(ctx, obj)
			}
		}
		if err != nil {
			t.Fatalf("applying %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

// names lists the grants' descriptions, sorted.
func names(gs []grant) []string {
	out := make([]string, 0, len(gs))
	for _, g := range gs {
		out = append(out, g.String())
	}
	sort.Strings(out)
	return out
}

// minus is what of a is not in b.
func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

// TestRBACMatchesCalls checks the chart's rules against the calls the code makes. It renders
// the chart, applies its ServiceAccount, ClusterRole, Role and bindings to the test API server,
// and runs the real controllers (pkg/operator, leader election on) as that ServiceAccount
// (impersonated), recording every request they send. Three runs:
//
//   - sim, watch-list: the simulated cloud (keeping its instances in the ConfigMap the chart
//     names), with client-go's informers streaming their initial lists over a watch (the
//     default against Kubernetes 1.35). A scenario drives the controllers through their paths: pending pods (with PersistentVolumeClaims, a
//     PodDisruptionBudget and a DaemonSet in the cluster) get NodeClaims, instances and Nodes,
//     and are bound; an emptied node is consolidated (tainted, its claim deleted, drained,
//     finalized); then every NodeClaim is deleted, so the nodes are cordoned and drained: pods
//     evicted, the budget refusing one eviction until the NodeClaim's terminationGracePeriod
//     ends and the pod is deleted.
//   - sim, list-watch: the same with informers that list, then watch (older API servers, and
//     client-go's fallback).
//   - aws: the AWS cloud against the in-process AWS fake; an EC2NodeClass is created (the
//     controller adds its finalizer and writes its status) and deleted (it releases it).
//
// It fails on any request the server refused (403), and on any permission of a rendering that
// no recorded request needed (unless `unreached` names it with its reason); the sim and aws
// renderings must differ by exactly simOnly and awsOnly.
func TestRBACMatchesCalls(t *testing.T) {
	sim := renderRBAC(t, "--set", "cloudProvider=sim")
	aws := renderRBAC(t, "--set", "settings.clusterName=rbac")
	ensureNamespace(t, namespace)
	// A fresh leader election, so that the first run creates the Lease.
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: operator.LeaderElectionID}}
	if err := env.Client.Delete(context.Background(), lease); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, o := range sim.objects {
			if err := env.Client.Delete(context.Background(), o.DeepCopy()); client.IgnoreNotFound(err) != nil {
				t.Errorf("deleting %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	})

	simCalls, awsCalls := map[apiCall]int{}, map[apiCall]int{}
	for _, watchList := range []bool{true, false} {
		name := "sim/list-watch"
		if watchList {
			name = "sim/watch-list"
		}
		t.Run(name, func(t *testing.T) {
			sim.apply(t)
			setWatchListClient(t, watchList)
			calls := runSimScenario(t, sim)
			// The informers read as configured: the run covers the path it claims to.
			listed := calls[apiCall{Verb: "list", Resource: "nodes"}] > 0
			if listed == watchList {
				t.Errorf("informers listed nodes: %v, want %v", listed, !watchList)
			}
			for c, n := range calls {
				simCalls[c] += n
			}
		})
	}
	t.Run("aws", func(t *testing.T) {
		aws.apply(t)
		for c, n := range runAWSScenario(t, aws.account) {
			awsCalls[c] += n
		}
	})
	if t.Failed() {
		return
	}

	// Each rendering grants exactly what its runs needed.
	allCalls := map[apiCall]int{}
	for _, m := range []map[apiCall]int{simCalls, awsCalls} {
		for c, n := range m {
			allCalls[c] += n
		}
	}
	// The aws rendering's common grants are needed by the controllers both clouds run; the sim
	// run drives them further than the aws one can (no kubelets there to register Nodes).
	checkGrants(t, "cloudProvider=sim", sim.grants, simCalls, simCalls)
	checkGrants(t, "cloudProvider=aws", aws.grants, allCalls, awsCalls)
	if got := minus(names(sim.grants), names(aws.grants)); !slices.Equal(got, simOnly) {
		t.Errorf("the sim rendering adds %v to the aws one, want %v (simOnly)", got, simOnly)
	}
	if got := minus(names(aws.grants), names(sim.grants)); !slices.Equal(got, awsOnly) {
		t.Errorf("the aws rendering adds %v to the sim one, want %v (awsOnly)", got, awsOnly)
	}
	for _, g := range awsOnly {
		if !slices.ContainsFunc(aws.grants, func(ag grant) bool { return ag.String() == g && usedBy(ag, awsCalls) }) {
			t.Errorf("%s: the aws run did not need it", g)
		}
	}

	if t.Failed() || testing.Verbose() {
		var lines []string
		for c, n := range allCalls {
			lines = append(lines, fmt.Sprintf("%s ×%d", c, n))
		}
		sort.Strings(lines)
		t.Logf("%d distinct calls of the controllers in all runs:\n  %s", len(lines), strings.Join(lines, "\n  "))
	}
}

// usedBy reports whether the grant allows one of the calls.
func usedBy(g grant, calls map[apiCall]int) bool {
	for c := range calls {
		if g.allows(c) {
			return true
		}
	}
	return false
}

// checkGrants fails for each grant that none of the calls needed, and for each of the calls
// made under the grants that no grant allows.
func checkGrants(t *testing.T, rendering string, gs []grant, calls, madeUnder map[apiCall]int) {
	t.Helper()
	var unused []string
	for _, g := range gs {
		used := usedBy(g, calls)
		_, excused := unreached[g.String()]
		switch {
		case !used && !excused:
			unused = append(unused, g.String())
		case used && excused:
			t.Errorf("%s is listed as unreached but a run needed it: remove it from the list", g)
		}
	}
	if len(unused) > 0 {
		t.Errorf("%s: the chart grants what no call of the controllers needed:\n  %s", rendering, strings.Join(unused, "\n  "))
	}
	for c := range madeUnder {
		if !slices.ContainsFunc(gs, func(g grant) bool { return g.allows(c) }) {
			t.Errorf("%s: the chart does not allow %s", rendering, c)
		}
	}
}

// setWatchListClient turns client-go's WatchListClient feature on or off for the informers
// created until the test ends.
func setWatchListClient(t *testing.T, on bool) {
	t.Helper()
	gates, ok := clientfeatures.FeatureGates().(interface {
		Set(clientfeatures.Feature, bool) error
	})
	if !ok {
		t.Fatalf("client-go's feature gates %T cannot be set", clientfeatures.FeatureGates())
	}
	prev := clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient)
	if err := gates.Set(clientfeatures.WatchListClient, on); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gates.Set(clientfeatures.WatchListClient, prev) })
}

// runningOperator is the controllers running as the chart's ServiceAccount.
type runningOperator struct {
	rec *callRecorder
	// events is the controllers' Event broadcaster.
	events  record.EventRecorder
	stop    context.CancelFunc
	stopped chan error
	once    sync.Once
}

// startOperator runs the controllers with opts as the ServiceAccount (impersonated), recording
// their requests, until the test ends or shutdown is called.
func startOperator(t *testing.T, account string, opts operator.Options) *runningOperator {
	t.Helper()
	rec := newCallRecorder()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: account}

	// The server enforces RBAC for the impersonated ServiceAccount: what the chart does not
	// grant is refused. (This probe is not recorded.)
	probe, err := client.New(rest.CopyConfig(cfg), client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := probe.List(context.Background(), &corev1.SecretList{}); !apierrors.IsForbidden(err) {
		t.Fatalf("listing secrets as %s: %v, want Forbidden (is RBAC enforced?)", account, err)
	}

	cfg.WrapTransport = rec.wrap
	opts.LeaderElection, opts.LeaderElectionNamespace = true, namespace
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "0", "0"
	opts.SkipControllerNameValidation = true
	opts.BatchIdleDuration, opts.BatchMaxDuration = 200*time.Millisecond, 2*time.Second
	op, err := operator.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	r := &runningOperator{rec: rec, events: op.Manager.GetEventRecorderFor("karpenter"), stop: stop, stopped: make(chan error, 1)}
	go func() { r.stopped <- op.Start(ctx) }()
	t.Cleanup(func() { r.shutdown(t) })
	return r
}

// shutdown stops the controllers (releasing the leader election Lease) and returns the calls
// they made; the first call fails the test on any request the server refused.
func (r *runningOperator) shutdown(t *testing.T) map[apiCall]int {
	t.Helper()
	r.once.Do(func() {
		r.stop()
		select {
		case err := <-r.stopped:
			if err != nil {
				t.Errorf("the controllers stopped with %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the controllers did not stop within 30s")
		}
		_, refused := r.rec.snapshot()
		if len(refused) > 0 {
			var lines []string
			for what, n := range refused {
				lines = append(lines, fmt.Sprintf("%s (%d times)", what, n))
			}
			sort.Strings(lines)
			t.Errorf("the API server refused requests of the controllers: the chart's RBAC lacks\n  %s", strings.Join(lines, "\n  "))
		}
	})
	calls, _ := r.rec.snapshot()
	return calls
}

// runSimScenario runs the controllers on the simulated cloud through provisioning,
// consolidation and termination (see TestRBACMatchesCalls) and returns their calls.
func runSimScenario(t *testing.T, chart chartRBAC) map[apiCall]int {
	ctx := context.Background()
	t.Cleanup(func() { purge(t) })
	opts := operator.DefaultOptions()
	opts.CloudProvider = operator.CloudProviderSim
	// As the chart configures the binary.
	opts.Sim.StateConfigMap = chart.env["SIM_STATE_CONFIGMAP"]
	if opts.Sim.StateConfigMap == "" {
		t.Fatalf("the sim rendering sets no SIM_STATE_CONFIGMAP: %v", chart.env)
	}
	t.Cleanup(func() {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: opts.Sim.StateConfigMap}}
		if err := env.Client.Delete(context.Background(), cm); client.IgnoreNotFound(err) != nil {
			t.Errorf("deleting the simulated cloud's state: %v", err)
		}
	})
	opts.Sim.LaunchLatency, opts.Sim.ReadyDelay = 100*time.Millisecond, 100*time.Millisecond
	opts.DisruptionPollInterval, opts.ConsolidationValidationDelay = 300*time.Millisecond, 500*time.Millisecond
	// The NodeOverlay controller reads the overlays and writes their status (the overlay below
	// selects no instance type, so the rest of the scenario runs as without it).
	opts.NodeOverlay = true
	op := startOperator(t, chart.account, opts)
	harness.StartBinder(t, env.Client)

	// The cluster: a NodePool and its EC2NodeClass, volumes, a budget, a DaemonSet.
	zone := "us-east-1a"
	// The zonal class binds when its first pod is placed, so the provisioner reads it (an
	// Immediate one the binder, standing in for the PersistentVolume controller, binds at once).
	waitForFirstConsumer := storagev1.VolumeBindingWaitForFirstConsumer
	zero := int64(0)
	mustCreate(t,
		nodeClass(),
		&karpv1alpha1.NodeOverlay{
			ObjectMeta: metav1.ObjectMeta{Name: "rbac"},
			Spec: karpv1alpha1.NodeOverlaySpec{
				Requirements:    []karpv1alpha1.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"none.large"}}},
				PriceAdjustment: ptr.To("-10%"),
			},
		},
		&karpv1.NodePool{
			ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec: karpv1.NodePoolSpec{
				Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
					Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
						{Key: awsv1.LabelInstanceCategory, Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m"}},
						{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
					},
					NodeClassRef:           &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
					TerminationGracePeriod: &metav1.Duration{Duration: 3 * time.Second},
				}},
				Disruption: karpv1.Disruption{
					ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized,
					ConsolidateAfter:    karpv1.NewNillableDuration(time.Second),
				},
			},
		},
		&storagev1.StorageClass{
			ObjectMeta:        metav1.ObjectMeta{Name: "zonal"},
			Provisioner:       "ebs.csi.aws.com",
			VolumeBindingMode: &waitForFirstConsumer,
			AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: corev1.LabelTopologyZone, Values: []string{zone}}}}},
		},
		&corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "vol-0123"}},
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}},
				}}}},
			},
		},
		pvc("data", "", "data"), pvc("scratch", "zonal", ""),
		&policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: "default"},
			Spec: policyv1.PodDisruptionBudgetSpec{
				MaxUnavailable: &intstr.IntOrString{IntVal: 0},
				Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}},
			},
		},
		&appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default"},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
					Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &zero, Containers: []corev1.Container{{Name: "agent", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
				},
			},
		},
	)
	// As kube-controller-manager's disruption controller would: the budget allows no eviction.
	// (Until a budget's status is observed, the API server answers evictions 429 with a
	// Retry-After of 10s, which client-go waits out inside the call.)
	var budget policyv1.PodDisruptionBudget
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "guarded"}, &budget); err != nil {
		t.Fatal(err)
	}
	budget.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: budget.Generation, DesiredHealthy: 1, ExpectedPods: 1}
	if err := env.Client.Status().Update(ctx, &budget); err != nil {
		t.Fatal(err)
	}

	// 1. Consolidation: a pod gets a node, leaves, and the empty node is consolidated away.
	mustCreate(t, testPod("alone", "1", nil))
	eventually(t, op, 30*time.Second, "the pod bound to a new node", func() (bool, string) {
		n, detail := unboundPods(t)
		return n == 0 && countNodes(t) == 1, detail
	})
	deletePods(t)
	eventually(t, op, 30*time.Second, "the empty node consolidated", func() (bool, string) {
		nodes, claims := countNodes(t), countClaims(t)
		return nodes == 0 && claims == 0, fmt.Sprintf("%d nodes, %d nodeclaims", nodes, claims)
	})

	// 2. Provisioning for pods with volumes, then termination of every NodeClaim: drains that
	// evict, and one that the budget blocks until the grace period ends.
	mustCreate(t,
		testPod("web-1", "1", nil), testPod("web-2", "1", nil), testPod("guarded", "500m", nil),
		testPod("db", "500m", []string{"data"}), testPod("cache", "500m", []string{"scratch"}),
	)
	eventually(t, op, 30*time.Second, "every pod bound", func() (bool, string) {
		n, detail := unboundPods(t)
		return n == 0, detail
	})
	var claims karpv1.NodeClaimList
	if err := env.Client.List(ctx, &claims); err != nil {
		t.Fatal(err)
	}
	for i := range claims.Items {
		if err := env.Client.Delete(ctx, &claims.Items[i]); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	eventually(t, op, 30*time.Second, "every node terminated and its pods gone", func() (bool, string) {
		nodes, claims, pods := countNodes(t), countClaims(t), countPods(t)
		return nodes == 0 && claims == 0 && pods == 0, fmt.Sprintf("%d nodes, %d nodeclaims, %d pods", nodes, claims, pods)
	})

	// 3. A repeated Event: the broadcaster patches the first one's count. The controllers'
	// Events repeat only after their dedupe timeout (two minutes, as Karpenter's), longer
	// than this run, so the repeat is published directly.
	message := fmt.Sprintf("a repeated event of the run at %v", time.Now().UnixNano())
	for range 2 {
		op.events.Event(&budget, corev1.EventTypeNormal, "RBACCheck", message)
	}
	eventually(t, op, 30*time.Second, "the repeated Event counted twice", func() (bool, string) {
		var evs corev1.EventList
		if err := env.Client.List(ctx, &evs, client.InNamespace("default")); err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Items {
			if e.Message == message {
				return e.Count == 2, fmt.Sprintf("count %d", e.Count)
			}
		}
		return false, "no RBACCheck Event"
	})
	return op.shutdown(t)
}

// runAWSScenario runs the controllers on the AWS cloud (the in-process fake of its APIs)
// through an EC2NodeClass's life and returns their calls.
func runAWSScenario(t *testing.T, account string) map[apiCall]int {
	ctx := context.Background()
	t.Cleanup(func() { purge(t) })
	far := fake.New(fake.Options{Region: "us-east-1"})
	t.Cleanup(far.Close)
	cfg := far.Config()
	opts := operator.DefaultOptions()
	opts.CloudProvider, opts.ClusterName = operator.CloudProviderAWS, "rbac"
	opts.AWS.Config, opts.AWS.ClusterEndpoint = &cfg, "https://rbac.example.com"
	op := startOperator(t, account, opts)

	nc := nodeClass()
	mustCreate(t, nc)
	eventually(t, op, 30*time.Second, "the EC2NodeClass finalized and resolved", func() (bool, string) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
			t.Fatal(err)
		}
		return len(nc.Finalizers) > 0 && len(nc.Status.Conditions) > 0, fmt.Sprintf("finalizers %v, %d conditions", nc.Finalizers, len(nc.Status.Conditions))
	})
	if err := env.Client.Delete(ctx, nc); err != nil {
		t.Fatal(err)
	}
	eventually(t, op, 30*time.Second, "the EC2NodeClass released and gone", func() (bool, string) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(nc), nc)
		return apierrors.IsNotFound(err), fmt.Sprintf("finalizers %v (%v)", nc.Finalizers, err)
	})
	return op.shutdown(t)
}

// categoryNodePool is a NodePool named default of the c and m instance categories on
// nodeClass.
func categoryNodePool() *karpv1.NodePool {
	return &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: awsv1.LabelInstanceCategory, Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m"}}},
			NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
		}}},
	}
}

func nodeClass() *awsv1.EC2NodeClass {
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			Role: "KarpenterNodeRole", AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "rbac"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "rbac"}}},
		},
	}
}

func pvc(name, storageClass, volume string) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			VolumeName:  volume,
		},
	}
	if storageClass != "" {
		c.Spec.StorageClassName = &storageClass
	} else {
		empty := ""
		c.Spec.StorageClassName = &empty
	}
	return c
}

// testPod is a pending pod of the scenario requesting cpu, mounting the named claims; "guarded"
// is selected by the PodDisruptionBudget.
func testPod(name, cpu string, claims []string) *corev1.Pod {
	zero := int64(0)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &zero, Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
	}
	for _, c := range claims {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: c, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	return pod
}

func mustCreate(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// eventually is harness.Eventually that, on a timeout, first logs the cluster's state and
// what the server refused the controllers.
func eventually(t *testing.T, op *runningOperator, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	harness.Eventually(t, timeout, what, cond, func() {
		describe(t)
		if _, refused := op.rec.snapshot(); len(refused) > 0 {
			t.Logf("requests the server refused: %v", refused)
		}
	})
}

// describe logs the scenario's pods, Nodes and NodeClaims, and the Events.
func describe(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	var pods corev1.PodList
	var nodes corev1.NodeList
	var claims karpv1.NodeClaimList
	var events corev1.EventList
	_ = env.Client.List(ctx, &pods, client.InNamespace("default"))
	_ = env.Client.List(ctx, &nodes)
	_ = env.Client.List(ctx, &claims)
	_ = env.Client.List(ctx, &events)
	for _, p := range pods.Items {
		t.Logf("pod %s: node %q, phase %s, deleting %v", p.Name, p.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp != nil)
	}
	for _, n := range nodes.Items {
		t.Logf("node %s: taints %v, finalizers %v, deleting %v", n.Name, n.Spec.Taints, n.Finalizers, n.DeletionTimestamp != nil)
	}
	for _, c := range claims.Items {
		t.Logf("nodeclaim %s: node %q, finalizers %v, deleting %v, conditions %v", c.Name, c.Status.NodeName, c.Finalizers, c.DeletionTimestamp != nil, c.Status.Conditions)
	}
	for _, e := range events.Items {
		t.Logf("event on %s %s: %s %s (×%d)", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message, e.Count)
	}
}

func unboundPods(t *testing.T) (int, string) {
	t.Helper()
	var pods corev1.PodList
	if err := env.Client.List(context.Background(), &pods, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" {
			names = append(names, p.Name)
		}
	}
	return len(names), fmt.Sprintf("%d pods unbound %v", len(names), names)
}

func countPods(t *testing.T) int {
	t.Helper()
	var l corev1.PodList
	if err := env.Client.List(context.Background(), &l, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}

func countNodes(t *testing.T) int {
	t.Helper()
	var l corev1.NodeList
	if err := env.Client.List(context.Background(), &l); err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}

func countClaims(t *testing.T) int {
	t.Helper()
	var l karpv1.NodeClaimList
	if err := env.Client.List(context.Background(), &l); err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}

func deletePods(t *testing.T) {
	t.Helper()
	if err := env.Client.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace("default"), client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
}

// purge removes what the scenario made, finalizers first.
func purge(t *testing.T) {
	t.Helper()
	env.Purge(t, []client.ObjectList{
		&karpv1.NodeClaimList{}, &corev1.NodeList{}, &karpv1.NodePoolList{}, &awsv1.EC2NodeClassList{},
		&corev1.PersistentVolumeClaimList{}, &corev1.PersistentVolumeList{}, &storagev1.StorageClassList{},
		&policyv1.PodDisruptionBudgetList{}, &appsv1.DaemonSetList{}, &karpv1alpha1.NodeOverlayList{},
	}, "default")
}
