package aws

import (
	"testing"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// TestReboot: Reboot calls ec2:RebootInstances on the claim's instance through the SDK, as the
// AWS provider v1.15.2's instance provider (pkg/providers/instance DefaultProvider.Reboot): the
// fake EC2 counts the reboot and records the permission check; without the permission
// (UnauthorizedOperation) the error is a NodeRebootFailedError, which fails the reboot at once;
// a terminated instance is a NodeClaimNotFoundError.
func TestReboot(t *testing.T) {
	f := newFixture(t)
	_, np := f.seed004()
	launched, err := f.provider.Create(f.ctx, claimFor(np, "general-purpose-gpu", nil))
	if err != nil {
		t.Fatal(err)
	}
	id, err := instanceIDOf(launched.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.provider.Reboot(f.ctx, launched, "op-1"); err != nil {
		t.Fatal(err)
	}
	if inst, _ := f.aws.Instance(id); inst.Reboots != 1 || inst.State != "running" {
		t.Fatalf("instance %s: %d reboots, state %s; want rebooted once, running", id, inst.Reboots, inst.State)
	}
	if n := f.aws.Calls("RebootInstances"); n != 1 {
		t.Errorf("%d RebootInstances calls, want 1", n)
	}
	f.aws.DenyEC2("RebootInstances")
	if err := f.provider.Reboot(f.ctx, launched, "op-2"); !cloudprovider.IsNodeRebootFailedError(err) {
		t.Errorf("Reboot without ec2:RebootInstances: %v, want a NodeRebootFailedError", err)
	}
	f.aws.AllowEC2("RebootInstances")
	f.aws.TerminateInstance(id)
	if err := f.provider.Reboot(f.ctx, launched, "op-3"); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Reboot of a terminated instance: %v, want a NodeClaimNotFoundError", err)
	}
}
