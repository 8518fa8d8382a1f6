package aws

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// NodeClassHashVersion versions NodeClassHash. Karpenter's own versions are v1…v6 and hash
// differently; ours is named apart, so that when one takes over from the other the NodeClaims
// it finds under a version it does not know are stamped again with its hash (as Karpenter's
// hash controller does), not drifted all at once.
const NodeClassHashVersion = "openkarpenter-v1"

// NodeClassHash hashes the EC2NodeClass fields a change of which drifts the nodes launched
// before it, as Karpenter's static drift does: everything in the spec but what is resolved
// dynamically (subnet, security group, AMI and capacity reservation selector terms, whose
// changes drift through what they resolve to) and ipPrefixCount (which Karpenter leaves out of
// its hash too: a change reaches new nodes only), with the AMI family as resolved (an alias
// implies it). Tags and the order of block device mappings do not matter.
//
// A field that is unset marshals to nothing, so adding an optional field to the API leaves the
// hash of every NodeClass that does not set it as it was: no version bump is needed for that.
func NodeClassHash(nc *awsv1.EC2NodeClass) string {
	spec := nc.Spec.DeepCopy()
	spec.SubnetSelectorTerms, spec.SecurityGroupSelectorTerms, spec.CapacityReservationSelectorTerms, spec.AMISelectorTerms = nil, nil, nil, nil
	spec.IPPrefixCount = nil
	family := cloudprovider.OptionsFromNodeClass(nc).AMIFamily
	spec.AMIFamily = &family
	slices.SortFunc(spec.BlockDeviceMappings, func(a, b *awsv1.BlockDeviceMapping) int {
		return cmp.Compare(aws.ToString(a.DeviceName), aws.ToString(b.DeviceName))
	})
	data, err := json.Marshal(spec) // maps marshal with sorted keys
	if err != nil {
		panic(fmt.Sprintf("hashing ec2nodeclass %s: %v", nc.Name, err))
	}
	h := fnv.New64a()
	_, _ = h.Write(data)
	return fmt.Sprintf("%016x", h.Sum64())
}

// stampHash writes the NodeClass's hash and version on it, and, when the NodeClass was last
// hashed under another version (or never), stamps its NodeClaims that are not drifted with the
// current hash, so that a new hashing scheme (or a takeover from Karpenter) drifts nothing.
func (r *NodeClassController) stampHash(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	kube := r.provider.opts.KubeClient
	want := NodeClassHash(nc)
	if nc.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] != NodeClassHashVersion {
		claims := &karpv1.NodeClaimList{}
		if err := kube.List(ctx, claims); err != nil {
			return fmt.Errorf("listing nodeclaims: %w", err)
		}
		var errs []error
		for i := range claims.Items {
			c := &claims.Items[i]
			if ref := c.Spec.NodeClassRef; ref == nil || ref.Name != nc.Name || c.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] == NodeClassHashVersion {
				continue
			}
			patch := client.MergeFrom(c.DeepCopy())
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] = NodeClassHashVersion
			// A claim already drifted stays so: its drift can no longer be judged.
			if meta.FindStatusCondition(c.Status.Conditions, karpv1.ConditionTypeDrifted) == nil {
				c.Annotations[awsv1.AnnotationEC2NodeClassHash] = want
			}
			if err := kube.Patch(ctx, c, patch); client.IgnoreNotFound(err) != nil {
				errs = append(errs, fmt.Errorf("stamping nodeclaim %s with the ec2nodeclass hash: %w", c.Name, err))
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	if nc.Annotations[awsv1.AnnotationEC2NodeClassHash] == want && nc.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] == NodeClassHashVersion {
		return nil
	}
	patch := client.MergeFrom(nc.DeepCopy())
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[awsv1.AnnotationEC2NodeClassHash] = want
	nc.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] = NodeClassHashVersion
	return client.IgnoreNotFound(kube.Patch(ctx, nc, patch))
}

// staticDrift reports whether the claim was launched from other static NodeClass fields than
// the NodeClass has now, as Karpenter judges it: the claim and the NodeClass (stamped by its
// controller, stampHash) both carry a hash under this version, and they differ.
func staticDrift(claim *karpv1.NodeClaim, nc *awsv1.EC2NodeClass) bool {
	have, claimHashed := claim.Annotations[awsv1.AnnotationEC2NodeClassHash]
	want, classHashed := nc.Annotations[awsv1.AnnotationEC2NodeClassHash]
	return claimHashed && classHashed && have != want &&
		claim.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] == NodeClassHashVersion &&
		nc.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] == NodeClassHashVersion
}
