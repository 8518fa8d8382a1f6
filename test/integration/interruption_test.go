package integration_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/operator"
	awsprovider "github.com/openkarpenter/karpenter/pkg/providers/aws"
	"github.com/openkarpenter/karpenter/pkg/providers/aws/fake"
	"github.com/openkarpenter/karpenter/pkg/test/harness"
)

// ec2Kubelet plays the kubelets of the fake EC2's instances: every running instance launched
// for a NodeClaim registers a Ready Node (named by its private DNS name, with the claim's
// labels and taints and Karpenter's unregistered taint, as the user data tells the real
// kubelet), and the Node of a terminated instance goes away, as the cloud node lifecycle
// controller would remove it.
func ec2Kubelet(far *fake.AWS) func(context.Context) error {
	return func(ctx context.Context) error {
		var claims karpv1.NodeClaimList
		if err := env.Client.List(ctx, &claims); err != nil {
			return err
		}
		byInstance := map[string]*karpv1.NodeClaim{}
		for i := range claims.Items {
			c := &claims.Items[i]
			if id := c.Status.ProviderID; id != "" {
				byInstance[id[strings.LastIndex(id, "/")+1:]] = c
			}
		}
		var nodes corev1.NodeList
		if err := env.Client.List(ctx, &nodes); err != nil {
			return err
		}
		registered := map[string]*corev1.Node{}
		for i := range nodes.Items {
			registered[nodes.Items[i].Spec.ProviderID] = &nodes.Items[i]
		}
		for _, inst := range far.Instances() {
			providerID := awsprovider.ProviderID(inst.Zone, inst.ID)
			node, claim := registered[providerID], byInstance[inst.ID]
			switch {
			case inst.State != "running" && node != nil && node.DeletionTimestamp == nil:
				if err := env.Client.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
					return err
				}
			case inst.State == "running" && claim != nil:
				if node == nil {
					var err error
					if node, err = registerNode(ctx, inst, providerID, claim); err != nil {
						return err
					}
				}
				if err := makeReady(ctx, node.Name, claim); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// registerNode creates the Node of an instance launched for claim, as its kubelet does.
func registerNode(ctx context.Context, inst fake.Instance, providerID string, claim *karpv1.NodeClaim) (*corev1.Node, error) {
	labels := maps.Clone(claim.Labels)
	maps.Copy(labels, map[string]string{
		corev1.LabelHostname: inst.PrivateDNSName, corev1.LabelInstanceTypeStable: inst.Type,
		corev1.LabelTopologyZone: inst.Zone, karpv1.CapacityTypeLabelKey: inst.CapacityType,
	})
	taints := append([]corev1.Taint{{Key: karpv1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}}, claim.Spec.Taints...)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: inst.PrivateDNSName, Labels: labels},
		Spec:       corev1.NodeSpec{ProviderID: providerID, Taints: append(taints, claim.Spec.StartupTaints...)},
	}
	return node, env.Client.Create(ctx, node)
}

// makeReady writes the Ready status the kubelet posts and plays the node lifecycle
// controller, which removes the not-ready taint the API server's admission gave the node.
// Karpenter edits the node too, hence the retries.
func makeReady(ctx context.Context, name string, claim *karpv1.NodeClaim) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node := &corev1.Node{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			return err
		}
		if !slices.ContainsFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == corev1.NodeReady }) {
			now := metav1.Now()
			node.Status = corev1.NodeStatus{
				Capacity: claim.Status.Capacity, Allocatable: claim.Status.Allocatable, Phase: corev1.NodeRunning,
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}},
			}
			if err := env.Client.Status().Update(ctx, node); err != nil {
				return err
			}
		}
		kept := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
		if len(kept) == len(node.Spec.Taints) {
			return nil
		}
		node.Spec.Taints = kept
		return env.Client.Update(ctx, node)
	})
}

// TestSpotInterruptionDrainsAndReplaces runs the controllers with --cloud-provider aws against
// the in-process AWS far end: pods land on a spot instance; an EC2 Spot Instance Interruption
// Warning arrives on the interruption queue; before the two-minute deadline the node is
// cordoned and drained, its pods are evicted and land on a replacement launched by a new fleet,
// and the interrupted instance is terminated.
func TestSpotInterruptionDrainsAndReplaces(t *testing.T) {
	t.Cleanup(func() { cleanup(t) })
	far := fake.New(fake.Options{Region: "us-west-2"})
	t.Cleanup(far.Close)
	far.SeedEKS(time.Now())
	cfg := far.Config()

	nc := nodeClass("default")
	nc.Spec.Role = fake.SeedNodeRole
	nc.Spec.SubnetSelectorTerms[0].Tags = map[string]string{"karpenter.sh/discovery": fake.SeedClusterName}
	nc.Spec.SecurityGroupSelectorTerms[0].Tags = map[string]string{"karpenter.sh/discovery": fake.SeedClusterName}
	create(t, nc, nodePool("default", func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			karpv1.NodeSelectorRequirementWithMinValues{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeSpot}})
	}))
	before, err := env.Evictions()
	if err != nil {
		t.Fatal(err)
	}
	rs := &replicaSet{name: "web", cpu: "1", memory: "2Gi"}
	rs.replicas.Store(6)
	harness.Every(t, 100*time.Millisecond, "replicaset", rs.step)
	harness.Every(t, 100*time.Millisecond, "kubelet", ec2Kubelet(far))
	harness.StartBinder(t, env.Client)
	r := startOperator(t, nil, func(o *operator.Options) {
		o.CloudProvider, o.ClusterName = operator.CloudProviderAWS, fake.SeedClusterName
		o.AWS.Config, o.AWS.InterruptionQueue = &cfg, fake.SeedInterruptionQueue
	})
	defer r.stop(t)
	defer func() {
		if t.Failed() {
			dumpAWSState(t, far)
		}
	}()

	var first fake.Instance
	harness.Eventually(t, 60*time.Second, "6 pods bound to one spot instance", func() (bool, string) {
		n, detail := unbound(t)
		running := runningInstances(far)
		if n == 0 && len(running) == 1 {
			first = running[0]
		}
		return n == 0 && len(running) == 1, fmt.Sprintf("%s; %d instances running", detail, len(running))
	})
	if first.CapacityType != "spot" {
		t.Fatalf("the first instance is %s, want spot", first.CapacityType)
	}
	fleets := len(far.Fleets())

	interrupted := func() float64 {
		return testutil.ToFloat64(metrics.NodeClaimsDisruptedTotal.WithLabelValues(metrics.MessageTypeSpotInterrupted, "default", karpv1.CapacityTypeSpot, "", metrics.TerminationModeGraceful))
	}
	interruptedBefore := interrupted()
	// Every change of the node is seen (a watch, not a poll: the taint may last less than a
	// poll's interval before the node goes).
	var cordoned atomic.Bool
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	nodeWatch, err := env.Kube.CoreV1().Nodes().Watch(watchCtx, metav1.ListOptions{FieldSelector: "metadata.name=" + first.PrivateDNSName})
	if err != nil {
		t.Fatal(err)
	}
	defer nodeWatch.Stop()
	go func() {
		for ev := range nodeWatch.ResultChan() {
			node, ok := ev.Object.(*corev1.Node)
			if !ok {
				continue
			}
			for _, taint := range node.Spec.Taints {
				if taint.Key == karpv1.DisruptedTaintKey {
					cordoned.Store(true)
				}
			}
			if node.Spec.Unschedulable {
				cordoned.Store(true)
			}
		}
	}()
	sent := time.Now()
	far.SendMessage(fake.SeedInterruptionQueue, fmt.Sprintf(`{"version":"0","id":"e2e","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","account":"111122223333","time":%q,"region":"us-west-2","resources":["arn:aws:ec2:%s:instance/%s"],"detail":{"instance-id":%q,"instance-action":"terminate"}}`,
		sent.UTC().Format(time.RFC3339), first.Zone, first.ID, first.ID))

	harness.Eventually(t, 2*time.Minute, "the pods on replacements and the interrupted instance terminated", func() (bool, string) {
		n, detail := unbound(t)
		inst, _ := far.Instance(first.ID)
		running := runningInstances(far)
		moved := 0
		for _, r := range running {
			if r.ID != first.ID {
				moved += podsOn(t, r.PrivateDNSName)
			}
		}
		return n == 0 && moved == 6 && inst.State == "terminated",
			fmt.Sprintf("%s; %d pods on replacements; interrupted instance %s; %d running", detail, moved, inst.State, len(running))
	})
	took := time.Since(sent)

	if n := far.QueueMessages(fake.SeedInterruptionQueue); n != 0 {
		t.Errorf("%d messages left in the queue: the handled one should be deleted", n)
	}
	if !cordoned.Load() {
		t.Errorf("node %s was never cordoned (tainted %s) before it went away", first.PrivateDNSName, karpv1.DisruptedTaintKey)
	}
	if got := len(far.Fleets()); got <= fleets {
		t.Errorf("no fleet launched the replacement (%d fleets before, %d after)", fleets, got)
	}
	after, err := env.Evictions()
	if err != nil {
		t.Fatal(err)
	}
	if got := interrupted() - interruptedBefore; got != 1 {
		t.Errorf("karpenter_nodeclaims_disrupted_total{reason=spot_interrupted} rose by %v, want 1", got)
	}
	evicted := 0
	for _, ev := range after[len(before):] {
		if ev.Namespace == "default" && strings.HasPrefix(ev.Name, "web-") && ev.Evicted() {
			evicted++
		}
	}
	if evicted != 6 {
		t.Errorf("%d pods evicted from the interrupted node, want 6", evicted)
	}
	offering := fmt.Sprintf("%s/%s/spot", first.Type, first.Zone)
	var replacements []string
	for _, r := range runningInstances(far) {
		replacements = append(replacements, fmt.Sprintf("%s %s/%s/%s", r.ID, r.Type, r.Zone, r.CapacityType))
		if r.Type == first.Type && r.Zone == first.Zone && r.CapacityType == "spot" {
			t.Errorf("replacement %s reuses the interrupted offering %s, which should be marked unavailable", r.ID, offering)
		}
	}
	t.Logf("interrupted %s (%s) replaced by %v in %s; %d pods evicted and rebound; %d fleets in all",
		first.ID, offering, replacements, took.Round(time.Millisecond), evicted, len(far.Fleets()))
}

// runningInstances are the fake EC2's running instances.
func runningInstances(far *fake.AWS) []fake.Instance {
	var out []fake.Instance
	for _, inst := range far.Instances() {
		if inst.State == "running" {
			out = append(out, inst)
		}
	}
	return out
}

// podsOn counts the live pods bound to the node.
func podsOn(t *testing.T, node string) int {
	t.Helper()
	var pods corev1.PodList
	if err := env.Client.List(context.Background(), &pods, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		if p.Spec.NodeName == node && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// dumpAWSState logs the instances, claims and nodes, to explain a failure.
func dumpAWSState(t *testing.T, far *fake.AWS) {
	for _, inst := range far.Instances() {
		t.Logf("instance %s %s %s %s %s %s", inst.ID, inst.Type, inst.Zone, inst.CapacityType, inst.State, inst.PrivateDNSName)
	}
	for _, c := range listClaims(t) {
		t.Logf("nodeclaim %s provider %q node %q conditions %v", c.Name, c.Status.ProviderID, c.Status.NodeName, c.Status.Conditions)
	}
	var nodes corev1.NodeList
	_ = env.Client.List(context.Background(), &nodes)
	for _, n := range nodes.Items {
		t.Logf("node %s provider %q taints %v unschedulable %v", n.Name, n.Spec.ProviderID, n.Spec.Taints, n.Spec.Unschedulable)
	}
}
