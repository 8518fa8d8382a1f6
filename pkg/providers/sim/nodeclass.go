package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// nodeClassKind is the kind of the NodeClass the simulated cloud reads.
const nodeClassKind = "EC2NodeClass"

// Drift reasons IsDrifted returns.
const (
	// DriftReasonAMI: the NodeClass now resolves to another image than the instance booted.
	DriftReasonAMI = cloudprovider.DriftReasonAMI
	// DriftReasonSubnet: the NodeClass's subnetSelectorTerms changed since launch.
	DriftReasonSubnet = cloudprovider.DriftReasonSubnet
	// DriftReasonSecurityGroup: the NodeClass's securityGroupSelectorTerms changed since launch.
	DriftReasonSecurityGroup = cloudprovider.DriftReasonSecurityGroup
)

// nodeClass reads the EC2NodeClass ref names and checks that it can be launched from. A NodeClass
// is usable unless it is being deleted, its Ready condition is False, or it asks for what this
// cloud does not model (cloudprovider.ValidateSimulated: Windows nodes among them): the
// simulated cloud has nothing to resolve, so a NodeClass no controller has reconciled (no
// conditions) is usable.
func (c *Cloud) nodeClass(ctx context.Context, ref *karpv1.NodeClassReference) (*awsv1.EC2NodeClass, error) {
	if ref == nil || ref.Name == "" {
		return nil, cloudprovider.NewNodeClassNotReadyError(errors.New("no nodeClassRef"))
	}
	if (ref.Kind != "" && ref.Kind != nodeClassKind) || (ref.Group != "" && ref.Group != awsv1.Group) {
		return nil, cloudprovider.NewNodeClassNotReadyError(
			fmt.Errorf("nodeclass %s/%s %q is not supported: the simulated cloud uses %s/%s", ref.Group, ref.Kind, ref.Name, awsv1.Group, nodeClassKind))
	}
	nc := &awsv1.EC2NodeClass{}
	if err := c.nodeClasses.Get(ctx, client.ObjectKey{Name: ref.Name}, nc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("ec2nodeclass %q not found: %w", ref.Name, err))
		}
		return nil, fmt.Errorf("getting ec2nodeclass %q: %w", ref.Name, err)
	}
	if nc.DeletionTimestamp != nil {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("ec2nodeclass %q is being deleted", nc.Name))
	}
	if cond := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeReady); cond != nil && cond.Status == metav1.ConditionFalse {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("ec2nodeclass %q is not ready: %s: %s", nc.Name, cond.Reason, cond.Message))
	}
	if reason, _, err := cloudprovider.ValidateSimulated(nc); err != nil {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("ec2nodeclass %q: %s: %w", nc.Name, reason, err))
	}
	return nc, nil
}

// nodeClassZones are the cloud's zones the NodeClass may launch in: those of its resolved
// subnets when its status lists any, else all of them. The result is sorted.
func nodeClassZones(nc *awsv1.EC2NodeClass, zones []string) []string {
	if len(nc.Status.Subnets) == 0 {
		return zones
	}
	var out []string
	for _, z := range zones {
		if slices.ContainsFunc(nc.Status.Subnets, func(s awsv1.Subnet) bool { return s.Zone == z }) {
			out = append(out, z)
		}
	}
	return out
}

// imageID is the image an instance with the given labels boots from the NodeClass: the first
// image in the NodeClass's status whose requirements the labels meet, else the first id term,
// else a fake AMI ID derived from the amiSelectorTerms and the architecture (so that changing
// the terms, an alias's version for example, changes the image and drifts the instances).
func imageID(nc *awsv1.EC2NodeClass, labels map[string]string) string {
	var deprecated string
	for _, ami := range nc.Status.AMIs {
		reqs, err := scheduling.FromNodeSelectorRequirements(ami.Requirements...)
		if err != nil || reqs.Matches(labels) != nil {
			continue
		}
		if !ami.Deprecated {
			return ami.ID
		}
		if deprecated == "" {
			deprecated = ami.ID
		}
	}
	if deprecated != "" {
		return deprecated
	}
	for _, term := range nc.Spec.AMISelectorTerms {
		if term.ID != "" {
			return term.ID
		}
	}
	return "ami-" + digest("ami", canonical(nc.Spec.AMISelectorTerms), labels["kubernetes.io/arch"])[:17]
}

// subnetHash and securityGroupHash identify the selector terms an instance launched with.
func subnetHash(nc *awsv1.EC2NodeClass) string {
	return digest("subnets", canonical(nc.Spec.SubnetSelectorTerms))[:16]
}

func securityGroupHash(nc *awsv1.EC2NodeClass) string {
	return digest("securitygroups", canonical(nc.Spec.SecurityGroupSelectorTerms))[:16]
}

// canonical is v's JSON, which encoding/json writes with map keys sorted: equal values give
// equal strings.
func canonical(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// The API types always marshal; fall back to something still deterministic.
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}
