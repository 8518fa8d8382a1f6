package sim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// Adopted describes an instance that runs before the simulated cloud starts: a node of a real
// cluster taken into a simulation (`karpenter simulate --from-cluster`). Adopt records it as if
// the cloud had launched it.
type Adopted struct {
	// ID is the instance ID (such as i-0abc…); empty means one is made up. It must not contain
	// a slash.
	ID string
	// InstanceType, Zone and CapacityType name its offering. A type the catalog does not know
	// is kept, with the capacity given and no price.
	InstanceType, Zone, CapacityType string
	// Hostname is its Node's name; PrivateIP its address (may be empty).
	Hostname, PrivateIP string
	// RunningSince is when it started running; zero means now.
	RunningSince time.Time
	// NodeClaimName, NodePoolName and NodeClassName say which NodeClaim, NodePool and
	// EC2NodeClass it belongs to; all empty for an instance Karpenter does not manage.
	NodeClaimName, NodePoolName, NodeClassName string
	// Unmanaged marks an instance Karpenter does not manage (a managed node group's): List does
	// not return it, as Karpenter's cloud provider lists only the instances it launched, so
	// the garbage collector leaves it alone.
	Unmanaged bool
	// Labels are the node labels the instance implies.
	Labels map[string]string
	// Capacity and Allocatable are its Node's.
	Capacity, Allocatable corev1.ResourceList
	// Bootstrap is what its user data told its kubelet.
	Bootstrap Bootstrap
}

// Adopt records a running instance the cloud did not launch, billed from now at the cloud's
// price of its offering (nothing when the prices do not have it; priced says whether they do).
// Its image, subnet and security group are those its EC2NodeClass resolves to now, so that it
// is not drifted for having been adopted. The instance's Node is not created: the caller
// creates it, named Hostname with the returned instance's ProviderID, and the Kubelet then
// keeps it as it keeps the Nodes of launched instances.
func (c *Cloud) Adopt(ctx context.Context, a Adopted) (in Instance, priced bool, err error) {
	if a.InstanceType == "" || a.Zone == "" || a.Hostname == "" {
		return Instance{}, false, errors.New("adopting an instance: instance type, zone and hostname are required")
	}
	if a.CapacityType == "" {
		a.CapacityType = karpv1.CapacityTypeOnDemand
	}
	labels := maps.Clone(a.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	var imageIDOf, subnets, groups string
	if a.NodeClassName != "" {
		nc, err := c.nodeClass(ctx, &karpv1.NodeClassReference{Name: a.NodeClassName})
		if err != nil {
			return Instance{}, false, fmt.Errorf("adopting instance of node %s: %w", a.Hostname, err)
		}
		imageIDOf, subnets, groups = imageID(nc, labels), subnetHash(nc), securityGroupHash(nc)
	}
	price, priced := c.prices.Price(a.InstanceType, a.Zone, a.CapacityType)

	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.restoreLocked(ctx); err != nil {
		return Instance{}, false, err
	}
	now := c.clock.Now()
	c.launches++
	id := a.ID
	if id == "" {
		id = instanceID(c.seed, c.launches)
	}
	if c.instances[id] != nil {
		return Instance{}, false, fmt.Errorf("adopting instance %s of node %s: the id is taken", id, a.Hostname)
	}
	if _, _, err := ParseProviderID(ProviderID(a.Zone, id)); err != nil {
		return Instance{}, false, fmt.Errorf("adopting instance of node %s: %w", a.Hostname, err)
	}
	if a.NodeClaimName != "" && c.byClaim[a.NodeClaimName] != nil {
		return Instance{}, false, fmt.Errorf("adopting instance %s of node %s: nodeclaim %s has an instance already", id, a.Hostname, a.NodeClaimName)
	}
	running := a.RunningSince
	if running.IsZero() || running.After(now) {
		running = now
	}
	record := &instance{
		seq:               c.launches,
		id:                id,
		providerID:        ProviderID(a.Zone, id),
		instanceType:      a.InstanceType,
		zone:              a.Zone,
		capacityType:      a.CapacityType,
		arch:              labels[corev1.LabelArchStable],
		price:             price,
		imageID:           imageIDOf,
		hostname:          a.Hostname,
		privateIP:         a.PrivateIP,
		launchTime:        now,
		runningTime:       running,
		claimName:         a.NodeClaimName,
		nodePoolName:      a.NodePoolName,
		nodeClassName:     a.NodeClassName,
		unmanaged:         a.Unmanaged,
		labels:            labels,
		capacity:          a.Capacity.DeepCopy(),
		allocatable:       a.Allocatable.DeepCopy(),
		subnetHash:        subnets,
		securityGroupHash: groups,
		bootstrap: Bootstrap{
			Labels:        maps.Clone(a.Bootstrap.Labels),
			Taints:        slices.Clone(a.Bootstrap.Taints),
			StartupTaints: slices.Clone(a.Bootstrap.StartupTaints),
		},
	}
	c.dirty = true
	c.instances[id] = record
	c.history = append(c.history, record)
	c.live[id] = record
	if a.NodeClaimName != "" {
		c.byClaim[a.NodeClaimName] = record
	}
	c.used[record.offering()]++
	return record.snapshot(now, c.nodeFailure()), priced, c.persistLocked(ctx)
}
