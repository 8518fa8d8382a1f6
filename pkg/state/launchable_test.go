package state

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// typesByPool is an InstanceTypeProvider answering from a map, with an error for a NodePool
// it does not know.
type typesByPool map[string][]*cloudprovider.InstanceType

func (t typesByPool) GetInstanceTypes(_ context.Context, np *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	if its, ok := t[np.Name]; ok {
		return its, nil
	}
	return nil, errors.New("nodeclass not ready")
}

// TestLaunchableInstanceTypes: NodePools being deleted and static ones are left out, one whose
// types cannot be listed is left out with its error, and the out-of-capacity marks apply.
func TestLaunchableInstanceTypes(t *testing.T) {
	m5 := &cloudprovider.InstanceType{Name: "m5.large", Offerings: cloudprovider.Offerings{
		{Zone: "a", CapacityType: karpv1.CapacityTypeSpot, Price: 0.04, Available: true},
		{Zone: "b", CapacityType: karpv1.CapacityTypeSpot, Price: 0.04, Available: true},
	}}
	cloud := typesByPool{"default": {m5}, "deleting": {m5}, "static": {m5}}
	now := metav1.NewTime(time.Unix(0, 0))
	pools := []*karpv1.NodePool{
		{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "deleting", DeletionTimestamp: &now}},
		{ObjectMeta: metav1.ObjectMeta{Name: "static"}, Spec: karpv1.NodePoolSpec{Replicas: ptr.To[int64](2)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "unlisted"}},
	}
	unavailable := cloudprovider.NewUnavailableOfferings(clocktesting.NewFakeClock(time.Unix(0, 0)), time.Minute)
	unavailable.MarkUnavailable(cloudprovider.OfferingID{InstanceType: "m5.large", Zone: "a", CapacityType: karpv1.CapacityTypeSpot})
	got, errs := LaunchableInstanceTypes(context.Background(), cloud, pools, unavailable)
	if len(got) != 1 || len(got["default"]) != 1 {
		t.Fatalf("types = %v, want the default NodePool's only", got)
	}
	if o := got["default"][0].Offerings; o[0].Available || !o[1].Available {
		t.Errorf("offerings = %+v, want zone a out of capacity", o)
	}
	if len(errs) != 1 || errs["unlisted"] == nil {
		t.Errorf("errs = %v, want the unlisted NodePool's", errs)
	}
}
