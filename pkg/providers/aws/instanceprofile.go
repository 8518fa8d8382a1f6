package aws

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
)

// Tags the provider puts on what it creates.
const (
	// TagNodePool, TagNodeClaim and TagNodeClass name the NodeClaim's NodePool, the NodeClaim
	// and its EC2NodeClass on instances, volumes and fleets.
	TagNodePool  = "karpenter.sh/nodepool"
	TagNodeClaim = "karpenter.sh/nodeclaim"
	TagNodeClass = "karpenter.k8s.aws/ec2nodeclass"
	// TagManagedBy holds the cluster name on everything the provider creates and manages.
	TagManagedBy = "karpenter.sh/managed-by"
	// TagRegion holds the region on instance profiles (IAM is global).
	TagRegion = "topology.kubernetes.io/region"
	// TagName is the EC2 console's name tag.
	TagName = "Name"
	// TagEKSClusterName names the cluster, as EKS tags what belongs to a cluster.
	TagEKSClusterName = "eks:eks-cluster-name"
)

// clusterTag is the tag key that marks a resource as the cluster's.
func (p *Provider) clusterTag() string { return "kubernetes.io/cluster/" + p.opts.ClusterName }

// instanceProfileName is the profile the provider manages for a NodeClass that names a role:
// the cluster name and a hash of region and NodeClass, as IAM names are global.
func (p *Provider) instanceProfileName(nc *awsv1.EC2NodeClass) string {
	h := fnv.New64a()
	h.Write([]byte(p.clients.Region() + "/" + nc.Name))
	name := fmt.Sprintf("%s_%016x", p.opts.ClusterName, h.Sum64())
	if len(name) > 128 {
		name = name[len(name)-128:]
	}
	return name
}

// roleName accepts a role name, path/name or ARN and returns the name.
func roleName(role string) string {
	if i := strings.LastIndex(role, "/"); i >= 0 {
		return role[i+1:]
	}
	return role
}

// resolveInstanceProfile returns the instance profile instances of the NodeClass get: the
// given spec.instanceProfile, which must exist, or a profile the provider creates for
// spec.role (tagged, holding exactly that role).
func (p *Provider) resolveInstanceProfile(ctx context.Context, nc *awsv1.EC2NodeClass) (string, error) {
	if nc.Spec.InstanceProfile != nil {
		name := *nc.Spec.InstanceProfile
		if _, err := p.clients.IAM.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)}); err != nil {
			if isNotFound(err) {
				return "", fmt.Errorf("spec.instanceProfile %q does not exist: create it or name a role in spec.role instead", name)
			}
			return "", fmt.Errorf("getting instance profile %q: %w", name, err)
		}
		return name, nil
	}
	if nc.Spec.Role == "" {
		return "", fmt.Errorf("neither spec.role nor spec.instanceProfile is set: set one of them")
	}
	role := roleName(nc.Spec.Role)
	name := p.instanceProfileName(nc)
	out, err := p.clients.IAM.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	var profile *iamtypes.InstanceProfile
	switch {
	case isNotFound(err):
		created, err := p.clients.IAM.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{
			InstanceProfileName: aws.String(name),
			Tags:                p.instanceProfileTags(nc),
		})
		if err != nil && errorCode(err) != "EntityAlreadyExists" {
			return "", fmt.Errorf("creating instance profile %s for spec.role %q: %w", name, nc.Spec.Role, err)
		}
		if err == nil {
			profile = created.InstanceProfile
		} else if out, err = p.clients.IAM.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)}); err != nil {
			return "", fmt.Errorf("getting instance profile %s: %w", name, err)
		} else {
			profile = out.InstanceProfile
		}
	case err != nil:
		return "", fmt.Errorf("getting instance profile %s: %w", name, err)
	default:
		profile = out.InstanceProfile
	}
	for _, r := range profile.Roles {
		if aws.ToString(r.RoleName) == role {
			return name, nil
		}
		if _, err := p.clients.IAM.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{
			InstanceProfileName: aws.String(name), RoleName: r.RoleName,
		}); err != nil && !isNotFound(err) {
			return "", fmt.Errorf("removing role %s from instance profile %s: %w", aws.ToString(r.RoleName), name, err)
		}
	}
	if _, err := p.clients.IAM.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{
		InstanceProfileName: aws.String(name), RoleName: aws.String(role),
	}); err != nil {
		if isNotFound(err) {
			return "", fmt.Errorf("spec.role %q does not exist: create the role or fix its name", nc.Spec.Role)
		}
		return "", fmt.Errorf("adding role %s to instance profile %s: %w", role, name, err)
	}
	return name, nil
}

// instanceProfileTags are the tags of the profile made for a NodeClass, as Karpenter's: the
// NodeClass's tags and the cluster's, the NodeClass's and the region's (IAM is global), which
// its published IAM policy's conditions require, and this cluster's managed-by mark.
func (p *Provider) instanceProfileTags(nc *awsv1.EC2NodeClass) []iamtypes.Tag {
	tags := mergeTags(nc.Spec.Tags, map[string]string{
		TagManagedBy:      p.opts.ClusterName,
		TagNodeClass:      nc.Name,
		p.clusterTag():    "owned",
		TagEKSClusterName: p.opts.ClusterName,
		TagRegion:         p.clients.Region(),
	})
	out := make([]iamtypes.Tag, 0, len(tags))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		out = append(out, iamtypes.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	return out
}

// deleteInstanceProfile removes the profile the provider created for the NodeClass, if any.
// Profiles the user named in spec.instanceProfile are left alone.
func (p *Provider) deleteInstanceProfile(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	if nc.Spec.InstanceProfile != nil {
		return nil
	}
	name := p.instanceProfileName(nc)
	out, err := p.clients.IAM.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting instance profile %s: %w", name, err)
	}
	managed := false
	for _, t := range out.InstanceProfile.Tags {
		if aws.ToString(t.Key) == TagManagedBy && aws.ToString(t.Value) == p.opts.ClusterName {
			managed = true
		}
	}
	if !managed {
		return nil
	}
	return p.deleteInstanceProfileNamed(ctx, name, out.InstanceProfile.Roles)
}

// deleteInstanceProfileNamed removes the profile's roles, then the profile.
func (p *Provider) deleteInstanceProfileNamed(ctx context.Context, name string, roles []iamtypes.Role) error {
	for _, r := range roles {
		if _, err := p.clients.IAM.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{
			InstanceProfileName: aws.String(name), RoleName: r.RoleName,
		}); err != nil && !isNotFound(err) {
			return fmt.Errorf("removing role %s from instance profile %s: %w", aws.ToString(r.RoleName), name, err)
		}
	}
	if _, err := p.clients.IAM.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String(name)}); err != nil && !isNotFound(err) {
		return fmt.Errorf("deleting instance profile %s: %w", name, err)
	}
	return nil
}

// collectInstanceProfiles deletes the instance profiles the provider created for NodeClasses
// that are gone (a NodeClass deleted while its finalizer was bypassed, or while no controller
// ran), as Karpenter's instance profile garbage collection does: profiles of this cluster and
// region (by their tags) whose ec2nodeclass tag names no EC2NodeClass. Profiles of other
// clusters, other regions and those users made are never touched.
func (p *Provider) collectInstanceProfiles(ctx context.Context) error {
	prefix := p.opts.ClusterName + "_"
	var errs []error
	pages := iam.NewListInstanceProfilesPaginator(p.clients.IAM, &iam.ListInstanceProfilesInput{})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("listing instance profiles: %w", err)
		}
		for _, listed := range page.InstanceProfiles {
			name := aws.ToString(listed.InstanceProfileName)
			if !strings.HasPrefix(name, prefix) {
				continue
			}
			out, err := p.clients.IAM.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
			if isNotFound(err) {
				continue
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("getting instance profile %s: %w", name, err))
				continue
			}
			tags := map[string]string{}
			for _, t := range out.InstanceProfile.Tags {
				tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
			}
			nodeClass, ok := tags[TagNodeClass]
			if tags[TagManagedBy] != p.opts.ClusterName || tags[p.clusterTag()] != "owned" || tags[TagRegion] != p.clients.Region() || !ok {
				continue
			}
			err = p.opts.KubeClient.Get(ctx, client.ObjectKey{Name: nodeClass}, &awsv1.EC2NodeClass{})
			if !apierrors.IsNotFound(err) {
				if err != nil {
					errs = append(errs, fmt.Errorf("getting ec2nodeclass %s: %w", nodeClass, err))
				}
				continue
			}
			if err := p.deleteInstanceProfileNamed(ctx, name, out.InstanceProfile.Roles); err != nil {
				errs = append(errs, err)
				continue
			}
			log.FromContext(ctx).Info("deleted the instance profile of a deleted ec2nodeclass", "instance-profile", name, "ec2nodeclass", nodeClass)
		}
	}
	return errors.Join(errs...)
}
