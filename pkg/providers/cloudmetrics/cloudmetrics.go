package cloudmetrics

import (
	"context"
	"time"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/metrics"
)

// Wrap returns cp instrumented for one calling controller: every call is timed in
// karpenter_cloudprovider_duration_seconds and every error counted in
// karpenter_cloudprovider_errors_total, labelled with controller, the method and cp.Name().
// Each controller gets its own instrumented CloudProvider over the same cp. Instrumenting an
// instrumented CloudProvider replaces its controller instead of timing calls twice.
//
// The result hides cp's concrete type: keep cp itself for what only the concrete type offers
// (the simulated cloud's faults, the AWS provider's controllers).
func Wrap(cp cloudprovider.CloudProvider, controller string) cloudprovider.CloudProvider {
	if m, ok := cp.(*instrumented); ok {
		cp = m.cp
	}
	return &instrumented{cp: cp, controller: controller}
}

// instrumented is a CloudProvider that records metrics about the calls it passes on.
type instrumented struct {
	cp         cloudprovider.CloudProvider
	controller string
}

var _ cloudprovider.CloudProvider = (*instrumented)(nil)

// Name implements cloudprovider.CloudProvider; it is not instrumented.
func (m *instrumented) Name() string { return m.cp.Name() }

// RepairPolicies implements cloudprovider.RepairPolicyProvider; it calls no cloud and is not instrumented.
func (m *instrumented) RepairPolicies() []cloudprovider.RepairPolicy { return m.cp.RepairPolicies() }

// Create implements cloudprovider.InstanceLifecycle.
func (m *instrumented) Create(ctx context.Context, claim *karpv1.NodeClaim) (_ *karpv1.NodeClaim, err error) {
	defer m.observe("Create", claimNodePool(claim), time.Now(), &err)
	return m.cp.Create(ctx, claim)
}

// Delete implements cloudprovider.InstanceLifecycle.
func (m *instrumented) Delete(ctx context.Context, claim *karpv1.NodeClaim) (err error) {
	defer m.observe("Delete", claimNodePool(claim), time.Now(), &err)
	return m.cp.Delete(ctx, claim)
}

// Get implements cloudprovider.InstanceGetter.
func (m *instrumented) Get(ctx context.Context, providerID string) (_ *karpv1.NodeClaim, err error) {
	defer m.observe("Get", "", time.Now(), &err)
	return m.cp.Get(ctx, providerID)
}

// List implements cloudprovider.InstanceLister.
func (m *instrumented) List(ctx context.Context) (_ []*karpv1.NodeClaim, err error) {
	defer m.observe("List", "", time.Now(), &err)
	return m.cp.List(ctx)
}

// GetInstanceTypes implements cloudprovider.InstanceTypeProvider.
func (m *instrumented) GetInstanceTypes(ctx context.Context, nodePool *karpv1.NodePool) (_ []*cloudprovider.InstanceType, err error) {
	defer m.observe("GetInstanceTypes", nodePoolName(nodePool), time.Now(), &err)
	return m.cp.GetInstanceTypes(ctx, nodePool)
}

// IsDrifted implements cloudprovider.DriftChecker.
func (m *instrumented) IsDrifted(ctx context.Context, claim *karpv1.NodeClaim) (_ cloudprovider.DriftReason, err error) {
	defer m.observe("IsDrifted", claimNodePool(claim), time.Now(), &err)
	return m.cp.IsDrifted(ctx, claim)
}

// Reboot implements cloudprovider.InstanceRebooter.
func (m *instrumented) Reboot(ctx context.Context, claim *karpv1.NodeClaim, operationID string) (err error) {
	defer m.observe("Reboot", claimNodePool(claim), time.Now(), &err)
	return m.cp.Reboot(ctx, claim, operationID)
}

// observe records a call of method for the NodePool ("" when for none).
func (m *instrumented) observe(method, nodePool string, start time.Time, err *error) {
	metrics.ObserveCloudProviderCall(m.controller, method, m.cp.Name(), nodePool, time.Since(start), *err != nil, ErrorType(*err))
}

// claimNodePool is the NodePool of a claim, "" for none.
func claimNodePool(claim *karpv1.NodeClaim) string {
	if claim == nil {
		return ""
	}
	return claim.Labels[karpv1.NodePoolLabelKey]
}

// nodePoolName is the NodePool's name, "" for none.
func nodePoolName(np *karpv1.NodePool) string {
	if np == nil {
		return ""
	}
	return np.Name
}

// ErrorType names the typed error err is or wraps, as the error label of the cloud provider
// metrics: NodeClaimNotFoundError, InsufficientCapacityError, NodeClassNotReadyError or
// CreateError; "" for nil and for errors of no known type.
func ErrorType(err error) string {
	switch {
	case err == nil:
		return ""
	case cloudprovider.IsNodeClaimNotFoundError(err):
		return "NodeClaimNotFoundError"
	case cloudprovider.IsInsufficientCapacityError(err):
		return "InsufficientCapacityError"
	case cloudprovider.IsNodeClassNotReadyError(err):
		return "NodeClassNotReadyError"
	case cloudprovider.IsCreateError(err):
		return "CreateError"
	}
	return ""
}
