package capacitybuffer_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1beta1 "github.com/openkarpenter/karpenter/pkg/apis/autoscaling/v1beta1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/capacitybuffer"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
	"github.com/openkarpenter/karpenter/pkg/provisioning"
	"github.com/openkarpenter/karpenter/pkg/state"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// env is the real API server (kube-apiserver and etcd) every test here runs against.
var env *apiserver.Env

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m, &env)) }

// triggers counts the provisioner wake-ups the controller asks for.
type triggers int

func (t *triggers) Trigger() { *t++ }

func namespace(t *testing.T, name string) string {
	t.Helper()
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	return name
}

func podTemplate(ns, name, cpu string) *corev1.PodTemplate {
	return &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Template:   corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}}, Spec: podSpec(cpu)},
	}
}

func podSpec(cpu string) corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}
}

func deployment(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec("500m")}},
	}
}

// TestStatus: each buffer, reconciled on the real API server, gets Karpenter's status.
func TestStatus(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "cb-status")
	// Other tests' provisioners would place these buffers too.
	t.Cleanup(func() {
		if err := env.Client.DeleteAllOf(context.Background(), &autoscalingv1beta1.CapacityBuffer{}, client.InNamespace(ns)); err != nil {
			t.Error(err)
		}
	})
	for _, obj := range []client.Object{
		podTemplate(ns, "small", "1"), podTemplate(ns, "large", "3"),
		deployment(ns, "web", 10), deployment(ns, "tiny", 2),
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	templateRef := func(name string) *autoscalingv1beta1.LocalObjectRef {
		return &autoscalingv1beta1.LocalObjectRef{Name: name}
	}
	deployRef := func(name string) *autoscalingv1beta1.ScalableRef {
		return &autoscalingv1beta1.ScalableRef{APIGroup: "apps", Kind: "Deployment", Name: name}
	}
	for _, tc := range []struct {
		name     string
		spec     autoscalingv1beta1.CapacityBufferSpec
		ready    metav1.ConditionStatus
		reason   string
		replicas int32  // when ready
		template string // status.podTemplateRef when ready, "" for none
	}{
		{"replicas of a template", autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: templateRef("small"), Replicas: ptr.To[int32](3)}, metav1.ConditionTrue, "Resolved", 3, "small"},
		{"limits alone", autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: templateRef("large"), Limits: autoscalingv1beta1.Limits{corev1.ResourceCPU: resource.MustParse("10")}}, metav1.ConditionTrue, "Resolved", 3, "large"},
		{"limits cap replicas", autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: templateRef("large"), Replicas: ptr.To[int32](5), Limits: autoscalingv1beta1.Limits{corev1.ResourceCPU: resource.MustParse("7")}}, metav1.ConditionTrue, "Resolved", 2, "large"},
		{"limits naming no requested resource", autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: templateRef("small"), Replicas: ptr.To[int32](4), Limits: autoscalingv1beta1.Limits{"nvidia.com/gpu": resource.MustParse("1")}}, metav1.ConditionTrue, "Resolved", 4, "small"},
		{"percentage of a deployment, rounded up", autoscalingv1beta1.CapacityBufferSpec{ScalableRef: deployRef("web"), Percentage: ptr.To[int32](25)}, metav1.ConditionTrue, "Resolved", 3, ""},
		{"percentage at least one", autoscalingv1beta1.CapacityBufferSpec{ScalableRef: deployRef("tiny"), Percentage: ptr.To[int32](1)}, metav1.ConditionTrue, "Resolved", 1, ""},
		{"the larger of replicas and percentage", autoscalingv1beta1.CapacityBufferSpec{ScalableRef: deployRef("web"), Percentage: ptr.To[int32](20), Replicas: ptr.To[int32](5)}, metav1.ConditionTrue, "Resolved", 5, ""},
		{"scalableRef without a count", autoscalingv1beta1.CapacityBufferSpec{ScalableRef: &autoscalingv1beta1.ScalableRef{Kind: "Deployment", Name: "web"}}, metav1.ConditionTrue, "Resolved", 0, ""},
		{"missing template", autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: templateRef("gone"), Replicas: ptr.To[int32](1)}, metav1.ConditionFalse, "PodTemplateNotFound", 0, ""},
		{"missing deployment", autoscalingv1beta1.CapacityBufferSpec{ScalableRef: deployRef("gone"), Replicas: ptr.To[int32](1)}, metav1.ConditionFalse, "ScalableRefNotFound", 0, ""},
		{"unsupported kind", autoscalingv1beta1.CapacityBufferSpec{ScalableRef: &autoscalingv1beta1.ScalableRef{APIGroup: "batch", Kind: "Job", Name: "web"}, Replicas: ptr.To[int32](1)}, metav1.ConditionFalse, "ResolutionFailed", 0, ""},
		{"neither ref", autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](1)}, metav1.ConditionFalse, "ResolutionFailed", 0, ""},
		{"another strategy", autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: templateRef("small"), Replicas: ptr.To[int32](1), ProvisioningStrategy: ptr.To("example.com/passive")}, metav1.ConditionFalse, "UnsupportedProvisioningStrategy", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := strings.ToLower(strings.ReplaceAll(strings.ReplaceAll(tc.name, " ", "-"), ",", ""))
			cb := &autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: tc.spec}
			if err := env.Client.Create(ctx, cb); err != nil {
				t.Fatal(err)
			}
			var woke triggers
			c := capacitybuffer.NewController(env.Client, clocktesting.NewFakeClock(time.Now().Truncate(time.Second)), &woke)
			res, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cb)})
			if err != nil {
				t.Fatal(err)
			}
			if res.RequeueAfter != capacitybuffer.ResyncPeriod || woke != 1 {
				t.Errorf("requeue after %s and %d wake-ups, want %s and 1", res.RequeueAfter, woke, capacitybuffer.ResyncPeriod)
			}
			got := &autoscalingv1beta1.CapacityBuffer{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cb), got); err != nil {
				t.Fatal(err)
			}
			cond := meta.FindStatusCondition(got.Status.Conditions, autoscalingv1beta1.ConditionReadyForProvisioning)
			if cond == nil || cond.Status != tc.ready || cond.Reason != tc.reason || cond.ObservedGeneration != got.Generation {
				t.Fatalf("ReadyForProvisioning %+v, want %s %s", cond, tc.ready, tc.reason)
			}
			if ptr.Deref(got.Status.ProvisioningStrategy, "") != ptr.Deref(got.Spec.ProvisioningStrategy, "") || got.Status.ProvisioningStrategy == nil {
				t.Errorf("status.provisioningStrategy %v, want the spec's %v", got.Status.ProvisioningStrategy, got.Spec.ProvisioningStrategy)
			}
			if tc.ready != metav1.ConditionTrue {
				return
			}
			if got.Status.Replicas == nil || *got.Status.Replicas != tc.replicas {
				t.Errorf("status.replicas %v, want %d", got.Status.Replicas, tc.replicas)
			}
			switch {
			case tc.template == "" && (got.Status.PodTemplateRef != nil || got.Status.PodTemplateGeneration != nil):
				t.Errorf("status names PodTemplate %v (generation %v), want none", got.Status.PodTemplateRef, got.Status.PodTemplateGeneration)
			case tc.template != "" && (got.Status.PodTemplateRef == nil || got.Status.PodTemplateRef.Name != tc.template || got.Status.PodTemplateGeneration == nil):
				t.Errorf("status.podTemplateRef %v (generation %v), want %s", got.Status.PodTemplateRef, got.Status.PodTemplateGeneration, tc.template)
			}
		})
	}
}

// TestProvisionerLaunchesForVirtualPods: on the real API server, a provisioning pass with a
// buffer's virtual pods and no pending pod launches a NodeClaim that holds them, nominates
// nothing, and sets the buffer's Provisioning condition; the next pass finds them room on that
// claim; once a real pod takes part of the room, the pass after launches again for the rest.
func TestProvisionerLaunchesForVirtualPods(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "cb-provision")
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	t.Cleanup(func() {
		env.Purge(t, []client.ObjectList{&karpv1.NodeClaimList{}, &karpv1.NodePoolList{}, &autoscalingv1beta1.CapacityBufferList{}}, ns)
	})
	env.EnsureNodeClass(t, "default")
	np := builders.NodePool(builders.NodePoolOptions{Name: "buffers", Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
		builders.Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.xlarge"),
		builders.Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand),
	}})
	if err := env.Client.Create(ctx, np); err != nil {
		t.Fatal(err)
	}
	np.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}}
	if err := env.Client.Status().Update(ctx, np); err != nil {
		t.Fatal(err)
	}
	cloud, err := sim.New(sim.Options{Clock: clk, NodeClasses: env.Client, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	cluster := state.NewCluster(env.Client, clk)
	p := provisioning.NewProvisioner(env.Client, cluster, cloud, cloudprovider.NewUnavailableOfferings(clk, 0), nil, clk, provisioning.Options{})
	p.KeepBuffers(capacitybuffer.NewBuffers(env.Client, clk))

	// Two chunks of 1 CPU: one m5.xlarge (4 CPU) holds both.
	buffer := &autoscalingv1beta1.CapacityBuffer{
		ObjectMeta: metav1.ObjectMeta{Name: "spare", Namespace: ns},
		Spec:       autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "spare"}, Replicas: ptr.To[int32](2)},
	}
	for _, obj := range []client.Object{podTemplate(ns, "spare", "1"), buffer} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	c := capacitybuffer.NewController(env.Client, clk, p)
	if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(buffer)}); err != nil {
		t.Fatal(err)
	}
	provisioning := func(want string) {
		t.Helper()
		got := &autoscalingv1beta1.CapacityBuffer{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(buffer), got); err != nil {
			t.Fatal(err)
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, autoscalingv1beta1.ConditionProvisioning)
		if cond == nil || cond.Reason != want {
			t.Fatalf("Provisioning %+v, want %s", cond, want)
		}
	}

	d, err := p.Provision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Created) != 1 || len(d.Results.NewClaims) != 1 || len(d.Results.NewClaims[0].Pods) != 0 || len(d.Results.PodErrors) != 0 {
		t.Fatalf("first pass: created %d claims, results %+v; want one claim holding the buffer and no pod in the results", len(d.Created), d.Results)
	}
	if targets := cluster.NominationTargets(); len(targets) != 0 {
		t.Errorf("virtual pods nominated to %v", targets)
	}
	provisioning(capacitybuffer.ReasonRequiresNewCapacity)
	waitForClaims(t, 1)

	// The claim is launching: the next pass finds the buffer room there.
	if d, err = p.Provision(ctx); err != nil || len(d.Created) != 0 {
		t.Fatalf("second pass: created %d claims (%v), want none: the launching claim holds the buffer", len(d.Created), err)
	}
	provisioning(capacitybuffer.ReasonFitsExistingCapacity)

	// A real pod the size of a chunk takes half the room (a launching claim offers what it
	// requested): it goes first, and one chunk needs new room again.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "real", Namespace: ns}, Spec: podSpec("1")}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pod in the cache", func() bool {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}) == nil
	})
	if d, err = p.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if len(d.Results.ExistingPlacements) != 1 || d.Results.ExistingPlacements[0].Pod.Name != "real" || len(d.Created) != 1 {
		t.Fatalf("third pass: placements %v, created %d; want the real pod on the launching claim and a new claim for the buffer", d.Results.ExistingPlacements, len(d.Created))
	}
	provisioning(capacitybuffer.ReasonRequiresNewCapacity)
}

func waitForClaims(t *testing.T, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d nodeclaims", n), func() bool {
		var claims karpv1.NodeClaimList
		return env.Client.List(context.Background(), &claims) == nil && len(claims.Items) == n
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
