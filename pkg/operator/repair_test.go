package operator_test

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/operator"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
	"github.com/openkarpenter/karpenter/pkg/test/harness"
)

var env *apiserver.Env

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m, &env)) }

// TestNodeRepairGate: the NodeRepair feature gate switches node repair, and
// --legacy-node-repair chooses which: two nodes whose Ready condition has been Unknown for
// longer than EC2's 30 minutes, one of a NodePool and one of a NodeClaim without NodePool.
// With the gate off (Karpenter's default) nothing touches them. With the gate, repair is a
// disruption method (Karpenter v1.15's default), and the legacy controller does not run:
// neither is deleted at once, since the method counts a condition's toleration from no earlier
// than its Node's creation (v1.15.0's RepairPolicyMatcher.Match), here a moment ago, and never
// repairs a NodeClaim without NodePool (NewCandidate: "repair requires a NodePool");
// package disruption's TestRepair* run the method on a fake clock. With --legacy-node-repair,
// the legacy controller (package repair) deletes both at once, as Karpenter's node.health did.
func TestNodeRepairGate(t *testing.T) {
	for _, tc := range []struct {
		name               string
		gate, legacy       bool
		pooled, standalone bool // repaired
	}{
		{name: "NodeRepair=false"},
		{name: "NodeRepair=true", gate: true},
		{name: "NodeRepair=true,legacy", gate: true, legacy: true, pooled: true, standalone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			t.Cleanup(func() {
				env.Purge(t, []client.ObjectList{&karpv1.NodeClaimList{}, &corev1.NodeList{}, &karpv1.NodePoolList{}, &awsv1.EC2NodeClassList{}})
			})
			entry, ok := catalog.Lookup("m5.large")
			if !ok {
				t.Fatal("catalog has no m5.large")
			}
			cloud, err := sim.New(sim.Options{Clock: clock.RealClock{}, NodeClasses: env.Client, Catalog: []catalog.Entry{entry}})
			if err != nil {
				t.Fatal(err)
			}
			opts := operator.DefaultOptions()
			if opts.NodeRepair || opts.LegacyNodeRepair {
				t.Fatal("NodeRepair or LegacyNodeRepair is on by default; Karpenter's defaults are off")
			}
			opts.NodeRepair, opts.LegacyNodeRepair = tc.gate, tc.legacy
			opts.LeaderElection = false
			opts.MetricsBindAddress, opts.HealthProbeBindAddress = "0", "0"
			opts.SkipControllerNameValidation = true
			opts.DisruptionPollInterval = time.Second
			opts.Sim.Cloud, opts.Sim.ReadyDelay = cloud, 100*time.Millisecond
			harness.StartOperator(t, env.Config, opts)

			nodeClass := &awsv1.EC2NodeClass{
				ObjectMeta: metav1.ObjectMeta{Name: "default"},
				Spec: awsv1.EC2NodeClassSpec{
					Role:                       "KarpenterNodeRole",
					AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
					SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "sim"}}},
					SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "sim"}}},
				},
			}
			ref := &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
			nodePool := &karpv1.NodePool{
				ObjectMeta: metav1.ObjectMeta{Name: "default"},
				Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
					Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
						{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}},
					},
					NodeClassRef: ref,
				}}},
			}
			claim := func(name string, labels map[string]string) *karpv1.NodeClaim {
				return &karpv1.NodeClaim{
					ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
					Spec: karpv1.NodeClaimSpec{
						Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
							{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}},
						},
						NodeClassRef: ref,
					},
				}
			}
			pooled := claim("pooled", map[string]string{karpv1.NodePoolLabelKey: nodePool.Name})
			standalone := claim("standalone", nil)
			for _, obj := range []client.Object{nodeClass, nodePool, pooled, standalone} {
				if err := env.Client.Create(ctx, obj); err != nil {
					t.Fatal(err)
				}
			}
			for _, c := range []*karpv1.NodeClaim{pooled, standalone} {
				harness.Eventually(t, 30*time.Second, "node "+c.Name+" to register", func() (bool, string) {
					if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
						return false, err.Error()
					}
					return c.Status.NodeName != "", "not registered"
				})
			}
			gone := func(c *karpv1.NodeClaim) bool {
				return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(c), &karpv1.NodeClaim{}))
			}
			// One after the other: two unhealthy nodes of two would be more than the legacy
			// controller's 20% of the cluster for the NodeClaim without NodePool.
			for _, c := range []struct {
				claim    *karpv1.NodeClaim
				repaired bool
			}{{pooled, tc.pooled}, {standalone, tc.standalone}} {
				// The kubelet stopped posting status 31 minutes ago.
				if err := cloud.MakeUnhealthy(c.claim.Status.ProviderID, sim.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Since: time.Now().Add(-31 * time.Minute)}); err != nil {
					t.Fatal(err)
				}
				harness.Eventually(t, 30*time.Second, "node "+c.claim.Name+" to report Ready Unknown", func() (bool, string) {
					node := &corev1.Node{}
					if err := env.Client.Get(ctx, client.ObjectKey{Name: c.claim.Status.NodeName}, node); err != nil {
						// Repair may have removed the node between two polls.
						return c.repaired && apierrors.IsNotFound(err), err.Error()
					}
					for _, cond := range node.Status.Conditions {
						if cond.Type == corev1.NodeReady {
							return cond.Status == corev1.ConditionUnknown, string(cond.Status)
						}
					}
					return false, "no Ready condition"
				})
				if c.repaired {
					harness.Eventually(t, 60*time.Second, "unhealthy node "+c.claim.Name+"'s NodeClaim to go", func() (bool, string) {
						return gone(c.claim), "still there"
					})
				}
			}
			// Node updates reach the controllers within milliseconds, and disruption passes
			// every second: give them three.
			time.Sleep(3 * time.Second)
			for _, c := range []struct {
				claim    *karpv1.NodeClaim
				repaired bool
			}{{pooled, tc.pooled}, {standalone, tc.standalone}} {
				if gone(c.claim) != c.repaired {
					t.Errorf("NodeClaim %s gone: %t, want %t", c.claim.Name, gone(c.claim), c.repaired)
				}
			}
			for _, in := range cloud.Instances() {
				repaired := in.Hostname == pooled.Status.NodeName && tc.pooled || in.Hostname == standalone.Status.NodeName && tc.standalone
				if terminated := in.State == sim.InstanceStateTerminated; terminated != repaired {
					t.Errorf("instance %s of %s is %s", in.ID, in.Hostname, in.State)
				}
			}
		})
	}
}

// TestNodeFailureRateValidated: --sim-node-failure-rate must be a non-negative number.
func TestNodeFailureRateValidated(t *testing.T) {
	for _, rate := range []float64{-1, math.NaN(), math.Inf(1)} {
		opts := operator.DefaultOptions()
		opts.Sim.NodeFailureRate = rate
		if err := opts.Validate(); err == nil || !strings.Contains(err.Error(), "--sim-node-failure-rate (SIM_NODE_FAILURE_RATE)") {
			t.Errorf("rate %v: error %v, want one naming the flag", rate, err)
		}
	}
	opts := operator.DefaultOptions()
	opts.Sim.NodeFailureRate = 0.01
	if err := opts.Validate(); err != nil {
		t.Errorf("rate 0.01: %v", err)
	}
}
