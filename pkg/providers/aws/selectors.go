package aws

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
)

// tagFilters turns a selector term's tags into EC2 filters: a value of "*" means the tag is
// present with any value; other values (which may hold * wildcards) are matched as given.
func tagFilters(tags map[string]string) []ec2types.Filter {
	var out []ec2types.Filter
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		if v := tags[k]; v == "*" {
			out = append(out, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
		} else {
			out = append(out, ec2types.Filter{Name: aws.String("tag:" + k), Values: []string{v}})
		}
	}
	return out
}

// describeTerm names a selector term in messages.
func describeTerm(id, name string, tags map[string]string) string {
	var parts []string
	if id != "" {
		parts = append(parts, "id "+id)
	}
	if name != "" {
		parts = append(parts, "name "+name)
	}
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		parts = append(parts, fmt.Sprintf("tag %s=%s", k, tags[k]))
	}
	return strings.Join(parts, ", ")
}

// resolveSubnets finds the subnets the NodeClass's subnetSelectorTerms select (terms are
// ORed, a term's fields ANDed), sorted by available addresses, most first, then by ID.
func (p *Provider) resolveSubnets(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.Subnet, error) {
	byID := map[string]ec2types.Subnet{}
	for i, term := range nc.Spec.SubnetSelectorTerms {
		filters := tagFilters(term.Tags)
		if term.ID != "" {
			filters = append(filters, ec2types.Filter{Name: aws.String("subnet-id"), Values: []string{term.ID}})
		}
		pages := ec2.NewDescribeSubnetsPaginator(p.clients.EC2, &ec2.DescribeSubnetsInput{Filters: filters})
		found := 0
		for pages.HasMorePages() {
			out, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describing subnets for spec.subnetSelectorTerms[%d]: %w", i, err)
			}
			for _, s := range out.Subnets {
				byID[aws.ToString(s.SubnetId)] = s
				found++
			}
		}
		if found == 0 {
			return nil, fmt.Errorf("spec.subnetSelectorTerms[%d] (%s) matches no subnet", i, describeTerm(term.ID, "", term.Tags))
		}
	}
	subnets := slices.Collect(maps.Values(byID))
	slices.SortFunc(subnets, func(a, b ec2types.Subnet) int {
		return cmp.Or(cmp.Compare(aws.ToInt32(b.AvailableIpAddressCount), aws.ToInt32(a.AvailableIpAddressCount)),
			cmp.Compare(aws.ToString(a.SubnetId), aws.ToString(b.SubnetId)))
	})
	out := make([]awsv1.Subnet, 0, len(subnets))
	for _, s := range subnets {
		out = append(out, awsv1.Subnet{ID: aws.ToString(s.SubnetId), Zone: aws.ToString(s.AvailabilityZone), ZoneID: aws.ToString(s.AvailabilityZoneId)})
	}
	return out, nil
}

// resolveSecurityGroups finds the security groups the securityGroupSelectorTerms select,
// sorted by ID.
func (p *Provider) resolveSecurityGroups(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.SecurityGroup, error) {
	byID := map[string]awsv1.SecurityGroup{}
	for i, term := range nc.Spec.SecurityGroupSelectorTerms {
		filters := tagFilters(term.Tags)
		if term.ID != "" {
			filters = append(filters, ec2types.Filter{Name: aws.String("group-id"), Values: []string{term.ID}})
		}
		if term.Name != "" {
			filters = append(filters, ec2types.Filter{Name: aws.String("group-name"), Values: []string{term.Name}})
		}
		pages := ec2.NewDescribeSecurityGroupsPaginator(p.clients.EC2, &ec2.DescribeSecurityGroupsInput{Filters: filters})
		found := 0
		for pages.HasMorePages() {
			out, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describing security groups for spec.securityGroupSelectorTerms[%d]: %w", i, err)
			}
			for _, g := range out.SecurityGroups {
				byID[aws.ToString(g.GroupId)] = awsv1.SecurityGroup{ID: aws.ToString(g.GroupId), Name: aws.ToString(g.GroupName)}
				found++
			}
		}
		if found == 0 {
			return nil, fmt.Errorf("spec.securityGroupSelectorTerms[%d] (%s) matches no security group", i, describeTerm(term.ID, term.Name, term.Tags))
		}
	}
	out := slices.Collect(maps.Values(byID))
	slices.SortFunc(out, func(a, b awsv1.SecurityGroup) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}
