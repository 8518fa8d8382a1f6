package integration_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/operator"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
	"github.com/openkarpenter/karpenter/pkg/provisioning"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
	"github.com/openkarpenter/karpenter/pkg/test/harness"
)

var env *apiserver.Env

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m, &env)) }

// running is the controllers of one operator, started in the background.
type running struct {
	op        *operator.Operator
	stopOp    func()
	mu        sync.Mutex
	decisions []*provisioning.Decision
}

func (r *running) stop(t *testing.T) {
	t.Helper()
	r.stopOp()
}

func (r *running) claimedPrice() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	total := 0.0
	for _, d := range r.decisions {
		for _, c := range d.Results.NewClaims {
			total += c.Price
		}
	}
	return total
}

// startOperator runs the controllers against the test API server on cloud.
func startOperator(t *testing.T, cloud *sim.Cloud, mutate ...func(*operator.Options)) *running {
	t.Helper()
	opts := operator.DefaultOptions()
	opts.LeaderElection = false
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "0", "0"
	opts.BatchIdleDuration, opts.BatchMaxDuration = 200*time.Millisecond, 2*time.Second
	opts.Sim.Cloud = cloud
	opts.SkipControllerNameValidation = true
	opts.Sim.ReadyDelay = 100 * time.Millisecond
	for _, m := range mutate {
		m(&opts)
	}
	op, err := operator.New(env.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	r := &running{op: op}
	op.Provisioner.Observe(func(d *provisioning.Decision) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.decisions = append(r.decisions, d)
	})
	r.stopOp = harness.RunOperator(t, op)
	return r
}

// newCloud is a simulated cloud whose instances start 100ms after launch.
func newCloud(t *testing.T, mutate ...func(*sim.Options)) *sim.Cloud {
	t.Helper()
	o := sim.Options{Clock: clock.RealClock{}, NodeClasses: env.Client, Seed: 7, LaunchLatency: 100 * time.Millisecond}
	for _, m := range mutate {
		m(&o)
	}
	cloud, err := sim.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return cloud
}

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := env.Client.Create(context.Background(), obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
}

func nodeClass(name string) *awsv1.EC2NodeClass {
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: awsv1.EC2NodeClassSpec{
			Role: "KarpenterNodeRole", AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "it"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "it"}}},
		},
	}
}

// nodePool is the suite's NodePool: Karpenter's general-purpose requirements, then mutate.
func nodePool(name string, mutate ...func(*karpv1.NodePool)) *karpv1.NodePool {
	return builders.NodePool(builders.NodePoolOptions{Name: name, Requirements: builders.GeneralPurposeRequirements()}, mutate...)
}

// cleanup removes what a test made, finalizers first (there is no controller-manager).
func cleanup(t *testing.T) {
	env.Purge(t, []client.ObjectList{&karpv1.NodeClaimList{}, &corev1.NodeList{}, &karpv1.NodePoolList{}, &awsv1.EC2NodeClassList{}}, "default")
}

func listClaims(t *testing.T) []karpv1.NodeClaim {
	t.Helper()
	var l karpv1.NodeClaimList
	if err := env.Client.List(context.Background(), &l); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// unbound returns the pods not bound to a node, and a description of the first few.
func unbound(t *testing.T) (int, string) {
	t.Helper()
	var pods corev1.PodList
	if err := env.Client.List(context.Background(), &pods, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	n, detail := 0, ""
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" {
			n++
			if n <= 3 {
				detail += fmt.Sprintf(" %s", p.Name)
			}
		}
	}
	return n, fmt.Sprintf("%d pods unbound:%s", n, detail)
}

// liveInstances counts the cloud's instances that are not terminated.
func liveInstances(cloud *sim.Cloud) int {
	n := 0
	for _, in := range cloud.Instances() {
		if in.State != sim.InstanceStateTerminated {
			n++
		}
	}
	return n
}

// logScheduling logs, for a test that timed out waiting for pods, each unbound pod's status
// and Events, and each Node and NodeClaim: what the binder and Karpenter made of them.
func logScheduling(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	var pods corev1.PodList
	var evs corev1.EventList
	var nodes corev1.NodeList
	if err := errors.Join(env.Client.List(ctx, &pods, client.InNamespace("default")), env.Client.List(ctx, &evs, client.InNamespace("default")), env.Client.List(ctx, &nodes)); err != nil {
		t.Logf("listing what to log: %v", err)
		return
	}
	perNode := map[string]int{}
	for _, p := range pods.Items {
		perNode[p.Spec.NodeName]++
		if p.Spec.NodeName != "" {
			continue
		}
		t.Logf("unbound pod %s (created %s): nominated to %q, conditions %+v", p.Name, p.CreationTimestamp.Format(time.TimeOnly), p.Status.NominatedNodeName, p.Status.Conditions)
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.Name == p.Name {
				t.Logf("  event %s %s: %s (x%d, last %s)", e.Type, e.Reason, e.Message, e.Count, e.LastTimestamp.Format(time.TimeOnly))
			}
		}
	}
	for _, n := range nodes.Items {
		ready := corev1.ConditionUnknown
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = c.Status
			}
		}
		t.Logf("node %s %s: ready %s, %d pods, taints %v, deleting %v", n.Name, n.Labels[corev1.LabelInstanceTypeStable], ready, perNode[n.Name], n.Spec.Taints, n.DeletionTimestamp != nil)
	}
	for _, c := range listClaims(t) {
		var conds []string
		for _, cd := range c.Status.Conditions {
			conds = append(conds, fmt.Sprintf("%s=%s", cd.Type, cd.Status))
		}
		t.Logf("nodeclaim %s: node %q, deleting %v, %s", c.Name, c.Status.NodeName, c.DeletionTimestamp != nil, strings.Join(conds, " "))
	}
}
