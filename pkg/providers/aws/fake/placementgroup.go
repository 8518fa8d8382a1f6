package fake

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Placement group strategies, as EC2 names them.
const (
	StrategyCluster   = "cluster"
	StrategyPartition = "partition"
	StrategySpread    = "spread"
)

// spreadRackLimit is how many running instances a rack spread placement group holds per
// Availability Zone.
const spreadRackLimit = 7

// spreadLimitMessage is EC2's message when a spread group's zone is full; the AWS provider
// v1.15.2 recognises the limit by it (pkg/errors/errors.go, IsSpreadPlacementGroupLimitError).
const spreadLimitMessage = "You've reached the limit of instances in this spread placement group. A spread placement group can have up to seven instances per Availability Zone."

var pgIDPattern = regexp.MustCompile(`^pg-[0-9a-f]{8}([0-9a-f]{9})?$`)

// PlacementGroup is a seeded EC2 placement group.
type PlacementGroup struct {
	// ID is the group ID, such as pg-0123456789abcdef0.
	ID string
	// Name is the group name, unique in the region.
	Name string
	// Strategy is cluster, partition or spread.
	Strategy string
	// PartitionCount is a partition group's number of partitions (1 to 7); default 2 for one.
	PartitionCount int
	// SpreadLevel is a spread group's level: rack (default) or host.
	SpreadLevel string
	// State is available (default), pending, deleting or deleted.
	State string
	// Tags are the group's tags.
	Tags map[string]string

	// fullPartitions are a partition group's partitions out of capacity
	// (SetPartitionInsufficientCapacity).
	fullPartitions map[int]bool
}

// partitionICEMessage is the fake's message for a launch into a partition out of capacity;
// EC2 answers it with InsufficientInstanceCapacity (its exact message is not modelled).
const partitionICEMessage = "We currently do not have sufficient capacity in partition %d of placement group '%s'."

// AddPlacementGroup seeds a placement group for DescribePlacementGroups and for launch
// templates to launch into.
func (a *AWS) AddPlacementGroup(g PlacementGroup) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if g.State == "" {
		g.State = "available"
	}
	if g.Strategy == StrategyPartition && g.PartitionCount == 0 {
		g.PartitionCount = 2
	}
	if g.Strategy == StrategySpread && g.SpreadLevel == "" {
		g.SpreadLevel = "rack"
	}
	g.Tags = cloneTags(g.Tags)
	a.placementGroups = append(a.placementGroups, &g)
}

// SetPlacementGroupState changes a seeded group's state (pending, available, deleting,
// deleted), as EC2 moves it through its life.
func (a *AWS) SetPlacementGroupState(id, state string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if g := a.placementGroupLocked(id, ""); g != nil {
		g.State = state
	}
}

// SetPartitionInsufficientCapacity marks (out = true) or clears a partition of a partition
// placement group as out of capacity: a launch whose template targets it
// (Placement.PartitionNumber) fails with InsufficientInstanceCapacity, and a launch that
// targets none goes to the group's other partitions (failing the same way when all are out).
func (a *AWS) SetPartitionInsufficientCapacity(groupID string, partition int, out bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	g := a.placementGroupLocked(groupID, "")
	if g == nil {
		return
	}
	if g.fullPartitions == nil {
		g.fullPartitions = map[int]bool{}
	}
	if out {
		g.fullPartitions[partition] = true
	} else {
		delete(g.fullPartitions, partition)
	}
}

// SetPlacementStrategies sets the placement group strategies DescribeInstanceTypes reports an
// instance type supports (PlacementGroupInfo.SupportedStrategies); CreateFleet refuses to launch
// the type into a group of another strategy. By default (placementStrategies) burstable types
// support partition and spread, mac types none, and every other type all three.
func (a *AWS) SetPlacementStrategies(instanceType string, strategies ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.strategies[instanceType] = slices.Clone(strategies)
}

// placementStrategiesLocked are the strategies the instance type supports.
func (a *AWS) placementStrategiesLocked(instanceType string) []string {
	if s, ok := a.strategies[instanceType]; ok {
		return s
	}
	e, ok := a.entry(instanceType)
	switch {
	case !ok || strings.HasPrefix(e.Family, "mac"):
		return nil
	case e.Burstable:
		return []string{StrategyPartition, StrategySpread}
	}
	return []string{StrategyCluster, StrategyPartition, StrategySpread}
}

// placementGroupLocked finds a group by ID, or by name (a name is reused once its group is
// deleted: the group not deleted has it, else the last deleted).
func (a *AWS) placementGroupLocked(id, name string) *PlacementGroup {
	var found *PlacementGroup
	for _, g := range a.placementGroups {
		if id != "" && g.ID == id {
			return g
		}
		if id == "" && name != "" && g.Name == name && (found == nil || found.State == "deleted") {
			found = g
		}
	}
	return found
}

type xmlPlacementGroup struct {
	GroupName      string   `xml:"groupName"`
	GroupID        string   `xml:"groupId"`
	GroupArn       string   `xml:"groupArn"`
	State          string   `xml:"state"`
	Strategy       string   `xml:"strategy"`
	PartitionCount int      `xml:"partitionCount,omitempty"`
	SpreadLevel    string   `xml:"spreadLevel,omitempty"`
	Tags           []xmlTag `xml:"tagSet>item,omitempty"`
}

// describePlacementGroups answers DescribePlacementGroups: by GroupId or GroupName (an unknown
// one is an error, as in EC2: InvalidPlacementGroupId.Malformed for a malformed ID,
// InvalidPlacementGroup.Unknown for one that does not exist), then filtered by group-name,
// group-id, state, strategy, partition-count, spread-level and tags. Deleted groups are listed
// only when asked for by filter, not by name.
func (a *AWS) describePlacementGroups(q *queryCall) (any, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ids, names := q.list("GroupId"), q.list("GroupName")
	filters := q.filters()
	attr := func(g *PlacementGroup) func(string) ([]string, bool) {
		return func(name string) ([]string, bool) {
			if g == nil {
				g = &PlacementGroup{}
			}
			switch name {
			case "group-name":
				return []string{g.Name}, true
			case "group-id":
				return []string{g.ID}, true
			case "state":
				return []string{g.State}, true
			case "strategy":
				return []string{g.Strategy}, true
			case "partition-count":
				return []string{strconv.Itoa(g.PartitionCount)}, true
			case "spread-level":
				return []string{g.SpreadLevel}, true
			}
			return nil, false
		}
	}
	if err := validateFilters(filters, attr(nil)); err != nil {
		return nil, err
	}
	for _, id := range ids {
		if !pgIDPattern.MatchString(id) {
			return nil, badRequest("InvalidPlacementGroupId.Malformed", "Invalid id: \"%s\" (expecting \"pg-...\")", id)
		}
		if g := a.placementGroupLocked(id, ""); g == nil || g.State == "deleted" {
			return nil, badRequest("InvalidPlacementGroup.Unknown", "The Placement Group '%s' is unknown.", id)
		}
	}
	for _, n := range names {
		if g := a.placementGroupLocked("", n); g == nil || g.State == "deleted" {
			return nil, badRequest("InvalidPlacementGroup.Unknown", "The Placement Group '%s' is unknown.", n)
		}
	}
	out := []xmlPlacementGroup{}
	for _, g := range a.placementGroups {
		if len(ids)+len(names) > 0 && !slices.Contains(ids, g.ID) && !slices.Contains(names, g.Name) {
			continue
		}
		if ok, err := matchFilters(filters, g.Tags, attr(g)); err != nil {
			return nil, err
		} else if !ok {
			continue
		}
		out = append(out, xmlPlacementGroup{GroupName: g.Name, GroupID: g.ID, GroupArn: a.ec2ARN("placement-group", g.Name), State: g.State,
			Strategy: g.Strategy, PartitionCount: g.PartitionCount, SpreadLevel: g.SpreadLevel, Tags: xmlTags(g.Tags)})
	}
	return struct {
		Groups []xmlPlacementGroup `xml:"placementGroupSet>item"`
	}{out}, nil
}

// placementLocked checks a launch into the template's placement group as EC2 does and returns
// the group and the partition the instance gets (0 outside partition groups):
//   - the group must exist and be available;
//   - the instance type must support the group's strategy (PlacementGroupInfo);
//   - a cluster group's instances stay in one Availability Zone: once it holds a running
//     instance, a launch into another zone fails (the fake's InvalidParameterValue; EC2's exact
//     code for this is not modelled);
//   - a partition group takes PartitionNumber 1 to its PartitionCount (a number beyond it is
//     refused with InvalidParameterValue); without one EC2 picks the partition, here the one
//     with the fewest running instances (the lowest on a tie); a partition out of capacity
//     (SetPartitionInsufficientCapacity) fails a launch targeting it with
//     InsufficientInstanceCapacity and is not picked;
//   - a rack spread group holds seven running instances per zone; the next one fails with
//     InsufficientInstanceCapacity and EC2's spread limit message.
//
// PartitionNumber outside a partition group is refused as EC2 refuses it.
func (a *AWS) placementLocked(lt *LaunchTemplate, instanceType, zone string) (*PlacementGroup, int, *FleetError) {
	if lt.PlacementGroupID == "" && lt.PlacementGroupName == "" {
		if lt.PartitionNumber != 0 {
			return nil, 0, &FleetError{Code: "InvalidParameterCombination", Message: "A partition number may only be specified with a placement group."}
		}
		return nil, 0, nil
	}
	g := a.placementGroupLocked(lt.PlacementGroupID, lt.PlacementGroupName)
	ref := lt.PlacementGroupID
	if ref == "" {
		ref = lt.PlacementGroupName
	}
	if g == nil || g.State == "deleted" {
		return nil, 0, &FleetError{Code: "InvalidPlacementGroup.Unknown", Message: fmt.Sprintf("The Placement Group '%s' is unknown.", ref)}
	}
	if g.State != "available" {
		return nil, 0, &FleetError{Code: "InvalidPlacementGroup.Unavailable", Message: fmt.Sprintf("The Placement Group '%s' is %s.", ref, g.State)}
	}
	if !slices.Contains(a.placementStrategiesLocked(instanceType), g.Strategy) {
		return nil, 0, &FleetError{Code: "InvalidParameterValue",
			Message: fmt.Sprintf("The instance type %s is not supported in a %s placement group.", instanceType, g.Strategy)}
	}
	if lt.PartitionNumber != 0 && g.Strategy != StrategyPartition {
		return nil, 0, &FleetError{Code: "InvalidParameterValue",
			Message: fmt.Sprintf("Partition number may only be specified for a partition placement group; '%s' is a %s placement group.", g.Name, g.Strategy)}
	}
	var inZone, perPartition = 0, make([]int, g.PartitionCount+1)
	for _, i := range a.instances {
		if i.PlacementGroupID != g.ID || i.State != "running" {
			continue
		}
		if g.Strategy == StrategyCluster && i.Zone != zone {
			return nil, 0, &FleetError{Code: "InvalidParameterValue",
				Message: fmt.Sprintf("The cluster placement group '%s' holds instances in Availability Zone %s; its instances cannot launch in %s.", g.Name, i.Zone, zone)}
		}
		if i.Zone == zone {
			inZone++
		}
		if i.PartitionNumber > 0 && i.PartitionNumber < len(perPartition) {
			perPartition[i.PartitionNumber]++
		}
	}
	switch g.Strategy {
	case StrategySpread:
		if g.SpreadLevel != "host" && inZone >= spreadRackLimit {
			return nil, 0, &FleetError{Code: "InsufficientInstanceCapacity", Message: spreadLimitMessage}
		}
	case StrategyPartition:
		if lt.PartitionNumber != 0 {
			if lt.PartitionNumber < 1 || lt.PartitionNumber > g.PartitionCount {
				return nil, 0, &FleetError{Code: "InvalidParameterValue",
					Message: fmt.Sprintf("Partition number %d is invalid for placement group '%s', which has %d partitions.", lt.PartitionNumber, g.Name, g.PartitionCount)}
			}
			if g.fullPartitions[lt.PartitionNumber] {
				return nil, 0, &FleetError{Code: "InsufficientInstanceCapacity", Message: fmt.Sprintf(partitionICEMessage, lt.PartitionNumber, g.Name)}
			}
			return g, lt.PartitionNumber, nil
		}
		best := 0
		for p := 1; p <= g.PartitionCount; p++ {
			if !g.fullPartitions[p] && (best == 0 || perPartition[p] < perPartition[best]) {
				best = p
			}
		}
		if best == 0 {
			return nil, 0, &FleetError{Code: "InsufficientInstanceCapacity", Message: fmt.Sprintf("We currently do not have sufficient capacity in any partition of placement group '%s'.", g.Name)}
		}
		return g, best, nil
	}
	return g, 0, nil
}
