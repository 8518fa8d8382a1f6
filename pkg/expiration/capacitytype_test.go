package expiration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// listedInstances is a cloud that lists instances with the capacity types it is given, by
// provider ID.
type listedInstances map[string]string

func (l listedInstances) List(context.Context) ([]*karpv1.NodeClaim, error) {
	var out []*karpv1.NodeClaim
	for id, ct := range l {
		out = append(out, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{karpv1.CapacityTypeLabelKey: ct}},
			Status: karpv1.NodeClaimStatus{ProviderID: id}})
	}
	return out, nil
}

// reservedLabels are a node's labels in reservation cr-0dc4.
func reservedLabels() map[string]string {
	return map[string]string{karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeReserved,
		awsv1.LabelCapacityReservationID: "cr-0dc4", awsv1.LabelCapacityReservationType: "default",
		awsv1.LabelCapacityReservationInterruptible: "false"}
}

// reservedClaimAndNode creates a reserved NodeClaim launched as providerID and its Node,
// registered or not.
func reservedClaimAndNode(t *testing.T, name, providerID string, registered bool) {
	t.Helper()
	ctx := context.Background()
	c := claim(t, name, "Never", func(c *karpv1.NodeClaim) {
		c.Labels = reservedLabels()
		c.Labels[karpv1.NodePoolLabelKey] = "default"
	})
	c.Status.ProviderID = providerID
	if err := env.Client.Status().Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: reservedLabels()}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	if registered {
		n.Labels[karpv1.NodeRegisteredLabelKey] = "true"
	}
	if err := env.Client.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), n) })
}

// capacityTypeOf returns the capacity type label of a NodeClaim and a Node named name, failing
// when either still carries the reservation's id or type while not reserved.
func capacityTypeOf(t *testing.T, name string) (claimType, nodeType string) {
	t.Helper()
	c, n := &karpv1.NodeClaim{}, &corev1.Node{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, c); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	for what, labels := range map[string]map[string]string{"nodeclaim": c.Labels, "node": n.Labels} {
		_, id := labels[awsv1.LabelCapacityReservationID]
		_, typ := labels[awsv1.LabelCapacityReservationType]
		if labels[karpv1.CapacityTypeLabelKey] != karpv1.CapacityTypeReserved && (id || typ) {
			t.Errorf("%s %s is %s but keeps its reservation's labels: %v", what, name, labels[karpv1.CapacityTypeLabelKey], labels)
		}
	}
	return c.Labels[karpv1.CapacityTypeLabelKey], n.Labels[karpv1.CapacityTypeLabelKey]
}

// TestCapacityTypeControllerDemotesEndedReservations: a reserved node whose instance the cloud
// now lists as on-demand (its reservation expired or was cancelled) is relabelled on-demand,
// NodeClaim and registered Node, without the reservation's id and type; one still in its
// reservation is left alone; a Node not yet registered is relabelled once it registers, on a
// later pass. As the AWS provider v1.15.2's capacityreservation.capacitytype controller
// (Reconcile, syncCapacityType) and its suite_test.go.
func TestCapacityTypeControllerDemotesEndedReservations(t *testing.T) {
	ctx := context.Background()
	reservedClaimAndNode(t, "ended", "aws:///a/i-ended", true)
	reservedClaimAndNode(t, "kept", "aws:///a/i-kept", true)
	reservedClaimAndNode(t, "unregistered", "aws:///a/i-unregistered", false)
	cloud := listedInstances{"aws:///a/i-ended": karpv1.CapacityTypeOnDemand, "aws:///a/i-kept": karpv1.CapacityTypeReserved,
		"aws:///a/i-unregistered": karpv1.CapacityTypeOnDemand}
	c := NewCapacityTypeController(env.Client, cloud, nil)
	if err := c.Step(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, claim, node string }{
		{"ended", karpv1.CapacityTypeOnDemand, karpv1.CapacityTypeOnDemand},
		{"kept", karpv1.CapacityTypeReserved, karpv1.CapacityTypeReserved},
		{"unregistered", karpv1.CapacityTypeOnDemand, karpv1.CapacityTypeReserved},
	} {
		if claimType, nodeType := capacityTypeOf(t, tc.name); claimType != tc.claim || nodeType != tc.node {
			t.Errorf("%s: nodeclaim %s, node %s; want %s, %s", tc.name, claimType, nodeType, tc.claim, tc.node)
		}
	}

	n := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "unregistered"}, n); err != nil {
		t.Fatal(err)
	}
	n.Labels[karpv1.NodeRegisteredLabelKey] = "true"
	if err := env.Client.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	if err := c.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if _, nodeType := capacityTypeOf(t, "unregistered"); nodeType != karpv1.CapacityTypeOnDemand {
		t.Errorf("registered later: node %s, want on-demand", nodeType)
	}
}
