package aws

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// How long a placement group lookup is answered from memory, and how long the last group
// found stands in when EC2 cannot be asked, as the AWS provider v1.15.2's two caches
// (pkg/operator/operator.go: awscache.DefaultTTL and PlacementGroupAvailabilityTTL).
const (
	placementGroupTTL          = time.Minute
	placementGroupAvailableTTL = 24 * time.Hour
)

// Reasons of a False PlacementGroupReady condition, as the AWS provider v1.15.2's
// (pkg/controllers/nodeclass/placementgroup.go, PlacementGroupReconciler.Reconcile).
const (
	// ReasonPlacementGroupNotFound: no available group has the selector's name or ID.
	ReasonPlacementGroupNotFound = "PlacementGroupNotFound"
	// ReasonPlacementGroupResolutionFailed: DescribePlacementGroups failed.
	ReasonPlacementGroupResolutionFailed = "PlacementGroupResolutionFailed"
)

// placementGroup is a resolved EC2 placement group (the AWS provider v1.15.2's
// placementgroup.PlacementGroup).
type placementGroup struct {
	ID, Name string
	// Strategy is cluster, partition or spread.
	Strategy string
	// PartitionCount is a partition group's number of partitions.
	PartitionCount int32
	// SpreadLevel is a spread group's level: rack or host.
	SpreadLevel string
}

// placementGroups remembers lookups by selector: each for placementGroupTTL, and the last
// group a selector found for placementGroupAvailableTTL, answered with the error of a lookup
// that failed. It is safe for concurrent use.
type placementGroups struct {
	mu      sync.Mutex
	entries map[string]*placementGroupEntry
}

type placementGroupEntry struct {
	looked    time.Time       // when EC2 last answered
	found     *placementGroup // what it answered; nil: none
	lastFound *placementGroup // the last group it found
	foundAt   time.Time
}

// selectorKey names a selector: by ID or by name.
func selectorKey(s *awsv1.PlacementGroupSelector) string {
	if id := aws.ToString(s.ID); id != "" {
		return "id/" + id
	}
	return "name/" + aws.ToString(s.Name)
}

// selectorName is how messages name the selector: its name, else its ID.
func selectorName(s *awsv1.PlacementGroupSelector) string {
	if n := aws.ToString(s.Name); n != "" {
		return n
	}
	return aws.ToString(s.ID)
}

// placementGroup resolves the NodeClass's placementGroupSelector as the AWS provider v1.15.2's
// placement group provider (pkg/providers/placementgroup/provider.go, DefaultProvider.Get):
// nil without a selector; else DescribePlacementGroups by ID, or by name, filtered to the
// available state, the first group it lists (nil, and no error, when none), answered from
// memory for a minute. When EC2 fails, the error comes with the last group the selector found
// in the past day, which launches keep using.
func (p *Provider) placementGroup(ctx context.Context, nc *awsv1.EC2NodeClass) (*placementGroup, error) {
	sel := nc.Spec.PlacementGroupSelector
	if sel == nil {
		return nil, nil
	}
	key, now := selectorKey(sel), p.opts.Clock.Now()
	c := &p.placementGroups
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]*placementGroupEntry{}
	}
	e := c.entries[key]
	if e != nil && now.Sub(e.looked) < placementGroupTTL {
		return e.found, nil
	}
	in := &ec2.DescribePlacementGroupsInput{Filters: []ec2types.Filter{{Name: aws.String("state"), Values: []string{string(ec2types.PlacementGroupStateAvailable)}}}}
	if id := aws.ToString(sel.ID); id != "" {
		in.GroupIds = []string{id}
	} else {
		in.GroupNames = []string{aws.ToString(sel.Name)}
	}
	out, err := p.clients.EC2.DescribePlacementGroups(ctx, in)
	if err != nil {
		err = fmt.Errorf("describing placement groups: %w", err)
		if e != nil && e.lastFound != nil && now.Sub(e.foundAt) < placementGroupAvailableTTL {
			return e.lastFound, err
		}
		return nil, err
	}
	if e == nil {
		e = &placementGroupEntry{}
		c.entries[key] = e
	}
	e.looked, e.found = now, nil
	if len(out.PlacementGroups) > 0 {
		g := out.PlacementGroups[0]
		e.found = &placementGroup{ID: aws.ToString(g.GroupId), Name: aws.ToString(g.GroupName), Strategy: string(g.Strategy),
			PartitionCount: aws.ToInt32(g.PartitionCount), SpreadLevel: string(g.SpreadLevel)}
		e.lastFound, e.foundAt = e.found, now
	}
	return e.found, nil
}

// resolvePlacementGroup is the NodeClass's PlacementGroupReady condition, as the AWS provider
// v1.15.2's PlacementGroupReconciler.Reconcile (pkg/controllers/nodeclass/placementgroup.go):
// no error without a selector or with a group found; PlacementGroupResolutionFailed when EC2
// fails; PlacementGroupNotFound when no available group matches.
func (p *Provider) resolvePlacementGroup(ctx context.Context, nc *awsv1.EC2NodeClass) (string, error) {
	pg, err := p.placementGroup(ctx, nc)
	switch {
	case err != nil:
		return ReasonPlacementGroupResolutionFailed, fmt.Errorf("Failed to resolve placement group: %w", err) //nolint:staticcheck // upstream's message
	case pg == nil && nc.Spec.PlacementGroupSelector != nil:
		return ReasonPlacementGroupNotFound, fmt.Errorf("Placement group %q not found", selectorName(nc.Spec.PlacementGroupSelector)) //nolint:staticcheck // upstream's message
	}
	return "", nil
}

// supportsStrategy reports whether an instance type can launch into a group of the strategy,
// as the AWS provider v1.15.2's placementGroupCheck
// (pkg/providers/instancetype/compatibility/compatibility.go): its DescribeInstanceTypes
// PlacementGroupInfo.SupportedStrategies lists it.
func (f typeFacts) supportsStrategy(strategy string) bool {
	return slices.Contains(f.placementStrategies, strategy)
}

// catalogStrategies stand in for PlacementGroupInfo when the shipped catalog is in use, which
// does not hold it: burstable types take partition and spread groups, as EC2's T types do;
// mac types none; others all three.
func catalogStrategies(family string, burstable bool) []string {
	switch {
	case len(family) >= 3 && family[:3] == "mac":
		return nil
	case burstable:
		return []string{string(ec2types.PlacementStrategyPartition), string(ec2types.PlacementStrategySpread)}
	}
	return []string{string(ec2types.PlacementStrategyCluster), string(ec2types.PlacementStrategyPartition), string(ec2types.PlacementStrategySpread)}
}

// partitions is how many partitions the group's offerings are expanded into: a partition
// group's PartitionCount, 0 for other groups and for a partition group whose count EC2 did not
// give (its offerings are then not expanded, as upstream's resolver leaves them).
func (g *placementGroup) partitions() int32 {
	if g == nil || g.Strategy != string(ec2types.PlacementStrategyPartition) {
		return 0
	}
	return max(g.PartitionCount, 0)
}

// withPlacementGroup places the instance types in the group they launch into: each is labelled
// karpenter.k8s.aws/placement-group-id, as the AWS provider v1.15.2's offering provider adds it
// to every instance type's requirements (pkg/providers/instancetype/offering/offering.go,
// InjectOfferings), and its offerings are placed in the group (placeOfferings). The types are
// the NodeClass's own (cached by its needs, which name the group), so they are changed in
// place.
func withPlacementGroup(its []*cloudprovider.InstanceType, pg *placementGroup) {
	if pg == nil {
		return
	}
	for _, it := range its {
		it.Labels[awsv1.LabelPlacementGroupID] = pg.ID
		it.Offerings = placeOfferings(it.Offerings, pg)
	}
}

// placeOfferings returns the offerings as they launch into the group: each carries the group's
// ID (which scopes its out-of-capacity marks to the group) and, in a partition group, comes
// once per partition 1 to PartitionCount with that partition, as the AWS provider v1.15.2's
// PlacementGroupResolver expands them
// (pkg/providers/instancetype/offering/placement_group_resolver.go, ResolveOfferings), so
// that requirements, affinity and topology spread on karpenter.k8s.aws/placement-group-partition
// find them. Without a group they are returned as they are; otherwise the result is new.
func placeOfferings(ofs cloudprovider.Offerings, pg *placementGroup) cloudprovider.Offerings {
	if pg == nil {
		return ofs
	}
	n := pg.partitions()
	out := make(cloudprovider.Offerings, 0, len(ofs)*int(max(n, 1)))
	for _, o := range ofs {
		o.PlacementGroupID = pg.ID
		if n == 0 {
			out = append(out, o)
			continue
		}
		for k := int32(1); k <= n; k++ {
			o.PlacementPartition = k
			out = append(out, o)
		}
	}
	return out
}

// targetPartition narrows a claim's launch candidates in a partition group to one launch, as
// the AWS provider v1.15.2 launches it (pkg/providers/launchtemplate/launchtemplate.go,
// EnsureAll; instance/instance.go, launchInstance). A claim with a requirement on
// karpenter.k8s.aws/placement-group-partition targets one partition, the template's
// Placement.PartitionNumber: the lowest one the requirement allows with an available
// candidate (else the lowest it allows), and its candidates are that partition's. A claim
// without one leaves the partition to EC2: one candidate per instance type, zone, capacity type
// and reservation (one of an available partition where there is one), placed in the group but
// in no partition, so that its out-of-capacity marks are the group's; partition 0 is returned.
// Candidates outside a partition group are returned as they are.
func targetPartition(cands []cloudprovider.LaunchCandidate, reqs scheduling.Requirements) ([]cloudprovider.LaunchCandidate, int32) {
	if !slices.ContainsFunc(cands, func(c cloudprovider.LaunchCandidate) bool { return c.Offering.PlacementPartition != 0 }) {
		return cands, 0
	}
	if _, ok := reqs.Get(awsv1.LabelPlacementGroupPartition); ok {
		var target int32
		available := false
		for _, c := range cands { // LaunchCandidates kept only the partitions reqs allow
			p := c.Offering.PlacementPartition
			switch {
			case c.Offering.Available && (!available || p < target):
				target, available = p, true
			case !available && (target == 0 || p < target):
				target = p
			}
		}
		out := make([]cloudprovider.LaunchCandidate, 0, len(cands))
		for _, c := range cands {
			if c.Offering.PlacementPartition == target {
				out = append(out, c)
			}
		}
		return out, target
	}
	type pool struct {
		typ, zone, capacityType, reservation string
	}
	at := map[pool]int{}
	out := make([]cloudprovider.LaunchCandidate, 0, len(cands))
	for _, c := range cands {
		o := c.Offering
		k := pool{c.InstanceType.Name, o.Zone, o.CapacityType, o.ReservationID}
		o.PlacementPartition = 0
		i, seen := at[k]
		switch {
		case !seen:
			at[k] = len(out)
			out = append(out, cloudprovider.LaunchCandidate{InstanceType: c.InstanceType, Offering: o})
		case o.Available && !out[i].Offering.Available:
			out[i].Offering = o
		}
	}
	return out, 0
}

// placementLabels are the placement labels of a launched instance: the group's ID and, in a
// partition group, its partition number, as the AWS provider v1.15.2 labels its NodeClaims
// (pkg/cloudprovider/cloudprovider.go, instanceToNodeClaim, with the partition EC2 assigned:
// registrationhooks/placementgrouphook.go).
func placementLabels(pl *ec2types.Placement) map[string]string {
	out := map[string]string{}
	if pl == nil || aws.ToString(pl.GroupId) == "" {
		return out
	}
	out[awsv1.LabelPlacementGroupID] = aws.ToString(pl.GroupId)
	if n := aws.ToInt32(pl.PartitionNumber); n > 0 {
		out[awsv1.LabelPlacementGroupPartition] = strconv.Itoa(int(n))
	}
	return out
}

// labelPlacement labels a claim launched into the group: karpenter.k8s.aws/placement-group-id
// and, in a partition group, karpenter.k8s.aws/placement-group-partition: the partition the
// launch targeted (partition, already the label of its offering), as the AWS provider v1.15.2
// labels a claim the scheduler placed in a partition (pkg/cloudprovider/cloudprovider.go,
// instanceToNodeClaim), else the partition EC2 put the instance in, read back from
// DescribeInstances. For the latter the AWS provider v1.15.2 labels the claim with an empty
// partition at launch and holds its registration until the partition is read
// (registrationhooks/placementgrouphook.go, Registered); this provider has no registration
// hooks, so it reads the partition at once, and leaves the label off (logged) when EC2 does not
// give it yet.
func (p *Provider) labelPlacement(ctx context.Context, claim *karpv1.NodeClaim, pg *placementGroup, partition int32) {
	claim.Labels[awsv1.LabelPlacementGroupID] = pg.ID
	if pg.Strategy != string(ec2types.PlacementStrategyPartition) {
		return
	}
	if partition != 0 {
		claim.Labels[awsv1.LabelPlacementGroupPartition] = cloudprovider.PartitionLabel(partition)
		return
	}
	i, err := p.get(ctx, claim.Status.ProviderID)
	if err == nil {
		if v := placementLabels(i.Placement)[awsv1.LabelPlacementGroupPartition]; v != "" {
			claim.Labels[awsv1.LabelPlacementGroupPartition] = v
			return
		}
	}
	log.FromContext(ctx).V(1).Info("placement group partition not known yet; the claim is not labelled with it",
		"provider-id", claim.Status.ProviderID, "placement-group-id", pg.ID, "error", err)
}

// isSpreadLimit reports whether a fleet error is EC2's refusal of an eighth running instance in
// a rack spread group's zone, as the AWS provider v1.15.2 tells it
// (pkg/errors/errors.go, IsSpreadPlacementGroupLimitError).
func isSpreadLimit(e ec2types.CreateFleetError) bool {
	return strings.Contains(aws.ToString(e.ErrorMessage), "limit of instances in this spread placement group")
}
