package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

func TestAdopt(t *testing.T) {
	ctx := context.Background()
	c, clk := newTestCloud(t, Options{})
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1930m"), corev1.ResourceMemory: resource.MustParse("7Gi")}
	managed, priced, err := c.Adopt(ctx, Adopted{ID: "i-0abc", InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: karpv1.CapacityTypeOnDemand,
		Hostname: "node-a", RunningSince: clk.Now().Add(-time.Hour), NodeClaimName: "default-a", NodePoolName: "default", NodeClassName: "default",
		Capacity: alloc, Allocatable: alloc})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := c.prices.Price("m5.large", "us-east-1a", karpv1.CapacityTypeOnDemand)
	if !priced || managed.Price != want || managed.ProviderID != "sim:///us-east-1a/i-0abc" || managed.State != InstanceStateRunning {
		t.Errorf("adopted %+v (priced %v), want running at $%.4f/h as sim:///us-east-1a/i-0abc", managed, priced, want)
	}
	unmanaged, priced, err := c.Adopt(ctx, Adopted{InstanceType: "x9.custom", Zone: "us-east-1b", Hostname: "node-b", Unmanaged: true, Capacity: alloc, Allocatable: alloc})
	if err != nil {
		t.Fatal(err)
	}
	if priced || unmanaged.Price != 0 || unmanaged.CapacityType != karpv1.CapacityTypeOnDemand {
		t.Errorf("an unknown type: %+v priced %v, want no price, on-demand", unmanaged, priced)
	}
	listed, err := c.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].Status.ProviderID != managed.ProviderID {
		t.Errorf("List gives %d instances, want only the managed one", len(listed))
	}
	if got, err := c.Get(ctx, unmanaged.ProviderID); err != nil || got.Status.ProviderID != unmanaged.ProviderID {
		t.Errorf("Get of the unmanaged instance: %v", err)
	}
	if drift, err := c.IsDrifted(ctx, testClaim("default-a")); err != nil || drift != "" {
		t.Errorf("an adopted instance is drifted (%q, %v): its image and network are its NodeClass's", drift, err)
	}
	if cost := c.Cost(); cost != want {
		t.Errorf("cost $%.4f/h, want $%.4f/h (the unpriced one is free)", cost, want)
	}
	if _, _, err := c.Adopt(ctx, Adopted{ID: "i-0abc", InstanceType: "m5.large", Zone: "us-east-1a", Hostname: "node-c"}); err == nil || !strings.Contains(err.Error(), "taken") {
		t.Errorf("an instance id adopted twice: %v", err)
	}
	if _, _, err := c.Adopt(ctx, Adopted{InstanceType: "m5.large", Zone: "us-east-1a", Hostname: "node-d", NodeClassName: "missing"}); err == nil {
		t.Error("adopting into a missing NodeClass: no error")
	}
}
