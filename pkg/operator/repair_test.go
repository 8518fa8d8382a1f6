package operator_test

import (
	"context"
	"fmt"
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
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/sim"
	"github.com/openkarpenter/karpenter/pkg/operator"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
	"github.com/openkarpenter/karpenter/pkg/test/harness"
)

var env *apiserver.Env

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m, &env)) }

// TestNodeRepairGate: the NodeRepair feature gate switches node repair: on, the NodeClaim of a
// node whose Ready condition has been Unknown for longer than EC2's 30 minutes is deleted and
// its instance terminated; off (Karpenter's default), nothing touches it.
func TestNodeRepairGate(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("NodeRepair=%t", on), func(t *testing.T) {
			ctx := context.Background()
			t.Cleanup(func() {
				env.Purge(t, []client.ObjectList{&karpv1.NodeClaimList{}, &corev1.NodeList{}, &awsv1.EC2NodeClassList{}})
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
			if opts.NodeRepair {
				t.Fatal("NodeRepair is on by default; Karpenter's default is off")
			}
			opts.NodeRepair = on
			opts.LeaderElection = false
			opts.MetricsBindAddress, opts.HealthProbeBindAddress = "0", "0"
			opts.SkipControllerNameValidation = true
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
			claim := &karpv1.NodeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "standalone"},
				Spec: karpv1.NodeClaimSpec{
					Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
						{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}},
					},
					NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
				},
			}
			for _, obj := range []client.Object{nodeClass, claim} {
				if err := env.Client.Create(ctx, obj); err != nil {
					t.Fatal(err)
				}
			}
			harness.Eventually(t, 30*time.Second, "the node to register", func() (bool, string) {
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
					return false, err.Error()
				}
				return claim.Status.NodeName != "", "not registered"
			})

			// The kubelet stopped posting status 31 minutes ago.
			if err := cloud.MakeUnhealthy(claim.Status.ProviderID, sim.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Since: time.Now().Add(-31 * time.Minute)}); err != nil {
				t.Fatal(err)
			}
			harness.Eventually(t, 30*time.Second, "the node to report Ready Unknown", func() (bool, string) {
				node := &corev1.Node{}
				if err := env.Client.Get(ctx, client.ObjectKey{Name: claim.Status.NodeName}, node); err != nil {
					// With the gate on, repair may have removed the node between two polls.
					return on && apierrors.IsNotFound(err), err.Error()
				}
				for _, c := range node.Status.Conditions {
					if c.Type == corev1.NodeReady {
						return c.Status == corev1.ConditionUnknown, string(c.Status)
					}
				}
				return false, "no Ready condition"
			})
			if on {
				harness.Eventually(t, 60*time.Second, "the unhealthy node's NodeClaim to go", func() (bool, string) {
					err := env.Client.Get(ctx, client.ObjectKeyFromObject(claim), &karpv1.NodeClaim{})
					return apierrors.IsNotFound(err), fmt.Sprintf("%v", err)
				})
				if in := cloud.Instances()[0]; in.State != sim.InstanceStateTerminated {
					t.Errorf("instance %s is %s, want terminated", in.ID, in.State)
				}
				return
			}
			// Node updates reach the controllers within milliseconds; give them two seconds.
			time.Sleep(2 * time.Second)
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil || claim.DeletionTimestamp != nil {
				t.Errorf("with the gate off the NodeClaim was deleted (%v, %v)", err, claim.DeletionTimestamp)
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
