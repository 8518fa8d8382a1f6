package aws

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/nodeclaim"
	"github.com/openkarpenter/karpenter/pkg/providers/aws/fake"
	"github.com/openkarpenter/karpenter/pkg/test/eventlog"
)

func fakeSubnet(id, zone string, tags map[string]string) fake.Subnet {
	return fake.Subnet{ID: id, Zone: zone, VPCID: "vpc-1", CIDR: "10.1.0.0/24", AvailableIPs: 100, Tags: tags}
}

func fakeGroup(id, name string, tags map[string]string) fake.SecurityGroup {
	return fake.SecurityGroup{ID: id, Name: name, VPCID: "vpc-1", Tags: tags}
}

// launchRecorded launches a claim of the seed 004 NodePool and records it on the API server,
// as the lifecycle controller would.
func (f *fixture) launchRecorded(np *karpv1.NodePool, name string, extra ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodeClaim {
	f.t.Helper()
	launched, err := f.provider.Create(f.ctx, claimFor(np, name, nil, extra...))
	if err != nil {
		f.t.Fatal(err)
	}
	stored := launched.DeepCopy()
	if err := env.Client.Create(f.ctx, stored); err != nil {
		f.t.Fatal(err)
	}
	stored.Status = launched.Status
	if err := env.Client.Status().Update(f.ctx, stored); err != nil {
		f.t.Fatal(err)
	}
	return stored
}

// TestSpotInterruptionDeletesTheClaim: a spot interruption warning marks the offering out of
// capacity, deletes the claim (which drains and replaces the node) and is then deleted from
// the queue; a rebalance recommendation is only recorded; unknown instances' messages go.
func TestSpotInterruptionDeletesTheClaim(t *testing.T) {
	f := newFixture(t)
	_, np := f.seed004()
	np.Spec.Template.Spec.Requirements[2].Values = []string{"spot"}
	spot := f.launchRecorded(np, "general-purpose-spot")
	other := f.launchRecorded(np, "general-purpose-rebalanced")
	id := func(c *karpv1.NodeClaim) string { i, _ := instanceIDOf(c.Status.ProviderID); return i }

	f.aws.SendMessage("karpenter-interruptions", fmt.Sprintf(`{"version":"0","id":"1","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","account":"111122223333","time":"2026-11-22T10:00:00Z","region":"us-west-2","resources":["arn:aws:ec2:us-west-2a:instance/%s"],"detail":{"instance-id":"%s","instance-action":"terminate"}}`, id(spot), id(spot)))
	f.aws.SendMessage("karpenter-interruptions", fmt.Sprintf(`{"version":"0","id":"2","detail-type":"EC2 Instance Rebalance Recommendation","source":"aws.ec2","detail":{"instance-id":"%s"}}`, id(other)))
	f.aws.SendMessage("karpenter-interruptions", `{"version":"0","id":"3","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","detail":{"instance-id":"i-0notours000000000"}}`)
	f.aws.SendMessage("karpenter-interruptions", `not an event`)

	stopped := f.launchRecorded(np, "general-purpose-stopped")
	f.aws.SendMessage("karpenter-interruptions", fmt.Sprintf(`{"version":"0","id":"4","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","detail":{"instance-id":"%s","state":"stopping"}}`, id(stopped)))

	log := &eventlog.Log{}
	c := NewInterruptionController(f.provider, log)
	c.WaitTime = 0
	handled, err := c.Poll(f.ctx)
	if err != nil || len(handled) != 5 {
		t.Fatalf("Poll: %v, handled %d", err, len(handled))
	}
	// The events of Karpenter's AWS provider, on the claims (they have no nodes here).
	for _, want := range []eventlog.Event{
		{Kind: "NodeClaim", Name: spot.Name, Type: corev1.EventTypeWarning, Reason: "SpotInterrupted", Message: "Spot interruption warning was triggered"},
		{Kind: "NodeClaim", Name: spot.Name, Type: corev1.EventTypeWarning, Reason: "TerminatingOnInterruption", Message: "Interruption triggered termination for the NodeClaim"},
		{Kind: "NodeClaim", Name: other.Name, Type: corev1.EventTypeNormal, Reason: "SpotRebalanceRecommendation", Message: "Spot rebalance recommendation was triggered"},
		{Kind: "NodeClaim", Name: stopped.Name, Type: corev1.EventTypeWarning, Reason: "InstanceStopping", Message: "Instance is stopping"},
		{Kind: "NodeClaim", Name: stopped.Name, Type: corev1.EventTypeWarning, Reason: "TerminatingOnInterruption", Message: "Interruption triggered termination for the NodeClaim"},
	} {
		if !slices.Contains(log.Events(), want) {
			t.Errorf("no event %s among %v", want, log.Events())
		}
	}
	if got := log.Find("TerminatingOnInterruption", other.Name); len(got) != 0 {
		t.Errorf("a rebalance recommendation terminated its claim: %v", got)
	}
	if n := f.aws.QueueMessages("karpenter-interruptions"); n != 0 {
		t.Errorf("%d messages left in the queue", n)
	}
	got := &karpv1.NodeClaim{}
	if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(spot), got); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	} else if err == nil && got.DeletionTimestamp == nil {
		t.Error("the interrupted claim is not being deleted")
	}
	if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(other), got); err != nil || got.DeletionTimestamp != nil {
		t.Errorf("the rebalanced claim was deleted: %v", err)
	}
	offering := cloudprovider.OfferingID{InstanceType: spot.Labels[corev1.LabelInstanceTypeStable], Zone: spot.Labels[corev1.LabelTopologyZone], CapacityType: "spot"}
	if !f.provider.Unavailable().IsUnavailable(offering) {
		t.Errorf("%v not marked unavailable", offering)
	}
}

// TestOrphansAreCollected: an instance whose NodeClaim does not exist is terminated by the
// NodeClaim garbage collector once the grace period has passed; the claimed one is kept.
func TestOrphansAreCollected(t *testing.T) {
	f := newFixture(t)
	_, np := f.seed004()
	kept := f.launchRecorded(np, "general-purpose-kept")
	orphan, err := f.provider.Create(f.ctx, claimFor(np, "general-purpose-orphan", nil))
	if err != nil {
		t.Fatal(err)
	}
	gc := nodeclaim.NewGarbageCollector(env.Client, f.provider, f.clock, nil, nodeclaim.GarbageCollectorOptions{OrphanGracePeriod: time.Minute})
	if err := gc.Step(f.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.provider.Get(f.ctx, orphan.Status.ProviderID); err != nil {
		t.Fatalf("the orphan was terminated within its grace period: %v", err)
	}
	f.clock.Step(2 * time.Minute)
	if err := gc.Step(f.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.provider.Get(f.ctx, orphan.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("the orphan is still running: %v", err)
	}
	if _, err := f.provider.Get(f.ctx, kept.Status.ProviderID); err != nil {
		t.Errorf("the claimed instance was terminated: %v", err)
	}
}
