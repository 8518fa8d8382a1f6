package cloudprovider_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// TestEC2RepairPolicies holds EC2RepairPolicies to the AWS provider v1.15.2's RepairPolicies
// (pkg/cloudprovider/cloudprovider.go) with RebootForRepair off, field by field, and
// LegacyEC2RepairPolicies to its legacyRepairPolicies.
func TestEC2RepairPolicies(t *testing.T) {
	render := func(ps []cloudprovider.RepairPolicy) []string {
		var out []string
		for _, p := range ps {
			drain := "nil"
			if p.TerminationGracePeriod != nil {
				drain = p.TerminationGracePeriod.String()
			}
			out = append(out, fmt.Sprintf("%s %s /%s/ %s drain=%s priority=%d %s", p.ConditionType, p.ConditionStatus, p.ReasonRegex, p.TolerationDuration, drain, p.Priority, p.Action))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		got  []cloudprovider.RepairPolicy
		want []string
	}{
		{"v1.15.2", cloudprovider.EC2RepairPolicies(false), []string{
			"Ready False /.*/ 30m0s drain=10m0s priority=0 ReplaceNode",
			"Ready Unknown /.*/ 30m0s drain=10m0s priority=0 ReplaceNode",
			"AcceleratedHardwareReady False /.*XID(46|48|54|62|63|95|109|110|136|140|143|155|156|158).*/ 10m0s drain=5m0s priority=0 ReplaceNode",
			"AcceleratedHardwareReady False /.*XID(64|74|79|119|120).*/ 10m0s drain=5m0s priority=0 ReplaceNode",
			"AcceleratedHardwareReady False // 30m0s drain=10m0s priority=0 ReplaceNode",
			"StorageReady False /.*/ 30m0s drain=10m0s priority=0 ReplaceNode",
			"NetworkingReady False /.*/ 30m0s drain=10m0s priority=0 ReplaceNode",
			"KernelReady False /.*/ 30m0s drain=10m0s priority=0 ReplaceNode",
			"ContainerRuntimeReady False /.*/ 30m0s drain=10m0s priority=0 ReplaceNode",
		}},
		{"v1.15.2 RebootForRepair", cloudprovider.EC2RepairPolicies(true), []string{
			"Ready False /.*/ 30m0s drain=10m0s priority=0 ReplaceNode",
			"Ready Unknown /.*/ 30m0s drain=10m0s priority=0 ReplaceNode",
			"AcceleratedHardwareReady False /.*XID(46|48|54|62|63|95|109|110|136|140|143|155|156|158).*/ 10m0s drain=5m0s priority=0 RebootNode",
			"AcceleratedHardwareReady False /.*XID(64|74|79|119|120).*/ 10m0s drain=5m0s priority=0 ReplaceNode",
			"AcceleratedHardwareReady False // 30m0s drain=10m0s priority=0 ReplaceNode",
			"StorageReady False /.*/ 30m0s drain=10m0s priority=0 ReplaceNode",
			"NetworkingReady False /.*/ 30m0s drain=10m0s priority=0 ReplaceNode",
			"KernelReady False /.*/ 30m0s drain=10m0s priority=0 ReplaceNode",
			"ContainerRuntimeReady False /.*/ 30m0s drain=10m0s priority=0 ReplaceNode",
		}},
		{"legacy", cloudprovider.LegacyEC2RepairPolicies(), []string{
			"Ready False // 30m0s drain=nil priority=0 ReplaceNode",
			"Ready Unknown // 30m0s drain=nil priority=0 ReplaceNode",
			"AcceleratedHardwareReady False // 10m0s drain=nil priority=0 ReplaceNode",
			"StorageReady False // 30m0s drain=nil priority=0 ReplaceNode",
			"NetworkingReady False // 30m0s drain=nil priority=0 ReplaceNode",
			"KernelReady False // 30m0s drain=nil priority=0 ReplaceNode",
			"ContainerRuntimeReady False // 30m0s drain=nil priority=0 ReplaceNode",
		}},
	} {
		got := render(tc.got)
		if len(got) != len(tc.want) {
			t.Fatalf("%s: %d policies, want %d: %q", tc.name, len(got), len(tc.want), got)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s policy %d: %s, want %s", tc.name, i, got[i], tc.want[i])
			}
		}
	}
	// Each call returns the caller's own policies: changing a drain bound changes no other.
	a := cloudprovider.EC2RepairPolicies(false)
	*a[0].TerminationGracePeriod = time.Hour
	if b := cloudprovider.EC2RepairPolicies(false); *b[0].TerminationGracePeriod != 10*time.Minute || *a[1].TerminationGracePeriod != 10*time.Minute {
		t.Error("the policies share their drain bounds")
	}
}
