package scheduler

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// TestInstanceTypeFilterErrors: a pod no instance type of a NodePool can take is told which of
// Karpenter's three criteria (the requirements, enough resources, an offering) none met, in
// Karpenter's words, with the requirements and requests.
func TestInstanceTypeFilterErrors(t *testing.T) {
	offering := func(zone string) []cloudprovider.Offering {
		return []cloudprovider.Offering{{Zone: zone, CapacityType: karpv1.CapacityTypeOnDemand, Price: 0.1, Available: true}}
	}
	// A small amd64 type in zone 1, a big amd64 type in zone 2, a big arm64 type in zone 1.
	pool := onDemandPool("default")
	pool.InstanceTypes = []*cloudprovider.InstanceType{
		builders.InstanceType(builders.InstanceTypeOptions{Name: "small", CPU: 2, MemoryGiB: 4, Offerings: offering("test-zone-1")}),
		builders.InstanceType(builders.InstanceTypeOptions{Name: "big", CPU: 8, MemoryGiB: 16, Offerings: offering("test-zone-2")}),
		builders.InstanceType(builders.InstanceTypeOptions{Name: "big-arm", CPU: 8, MemoryGiB: 16, Arch: "arm64", Offerings: offering("test-zone-1")}),
	}
	for _, tc := range []struct {
		name string
		pod  builders.PodOptions
		want string
	}{
		{"too big", builders.PodOptions{CPU: "16"}, "no instance type has enough resources, requirements="},
		{"no zone", builders.PodOptions{CPU: "1", NodeSelector: map[string]string{corev1.LabelTopologyZone: "test-zone-3"}},
			"no instance type has the required offering, requirements="},
		{"too big, no zone", builders.PodOptions{CPU: "16", NodeSelector: map[string]string{corev1.LabelTopologyZone: "test-zone-3"}},
			"no instance type had enough resources or had a required offering, requirements="},
		{"amd64 big enough elsewhere", builders.PodOptions{CPU: "4", NodeSelector: map[string]string{corev1.LabelTopologyZone: "test-zone-1", corev1.LabelArchStable: "amd64"}},
			"no instance type which met the scheduling requirements and had enough resources, had a required offering, requirements="},
		{"typo", builders.PodOptions{CPU: "2000000"}, `resources={"cpu":"2M","pods":"1"} (CPU request >= 1 Million, m vs M typo?)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Solve(Input{Pods: []*corev1.Pod{builders.Pod(tc.pod)}, NodePools: []*NodePool{pool}})
			if len(r.PodErrors) != 1 || !strings.Contains(r.PodErrors[0].Err.Error(), tc.want) {
				t.Fatalf("errors %v, want one containing %q", r.PodErrors, tc.want)
			}
		})
	}

	// The whole message, as Karpenter renders it after its sentence.
	r := Solve(Input{Pods: []*corev1.Pod{builders.Pod(builders.PodOptions{CPU: "16", Memory: "1Gi"})}, NodePools: []*NodePool{pool}})
	const want = `incompatible with every nodepool: nodepool default: no instance type has enough resources, ` +
		`requirements=karpenter.sh/capacity-type In [on-demand], resources={"cpu":"16","memory":"1Gi","pods":"1"}`
	if len(r.PodErrors) != 1 || r.PodErrors[0].Err.Error() != want {
		t.Errorf("errors %v,\n want %q", r.PodErrors, want)
	}
}
