package sim_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/openkarpenter/karpenter/pkg/apis"
	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
)

// Launch a NodeClaim on a virtual clock with the cheapest spot offering of m5.large (in
// us-east-1a) out of capacity, so the launch falls through to the next cheapest; then
// interrupt the instance.
func Example() {
	nodeClass := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			Role:                       "KarpenterNodeRole",
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "demo"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "demo"}}},
		},
	}
	clock := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	cloud, err := sim.New(sim.Options{
		Clock:         clock,
		NodeClasses:   fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(nodeClass).Build(),
		Seed:          1,
		LaunchLatency: 45 * time.Second,
		Faults: sim.FaultPlan{Unavailable: []cloudprovider.OfferingID{
			{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: karpv1.CapacityTypeSpot},
		}},
	})
	if err != nil {
		panic(err)
	}
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "default-abcde", Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}},
			},
			NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
		},
	}
	launched, err := cloud.Create(context.Background(), claim)
	if err != nil {
		panic(err)
	}
	inst := cloud.Instances()[0]
	fmt.Println(launched.Labels[corev1.LabelInstanceTypeStable], launched.Labels[corev1.LabelTopologyZone], launched.Labels[karpv1.CapacityTypeLabelKey])
	fmt.Println(inst.State, inst.Hostname)

	clock.Step(time.Minute)
	fmt.Println(cloud.Instances()[0].State)
	_ = cloud.Interrupt(launched.Status.ProviderID)
	fmt.Println(cloud.Interruptions()[0].TerminationTime.Sub(clock.Now()))
	clock.Step(2 * time.Minute)
	fmt.Println(cloud.Instances()[0].State, cloud.Instances()[0].TerminationReason)
	// Output:
	// m5.large us-east-1b spot
	// pending ip-10-16-0-10.us-east-1.compute.internal
	// running
	// 2m0s
	// terminated SpotInterruption
}
