package aws

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	arctypes "github.com/aws/aws-sdk-go-v2/service/arczonalshift/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	kevents "github.com/openkarpenter/karpenter/pkg/events"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// zonalShifts mirrors the Amazon Application Recovery Controller (ARC) zonal shifts of the
// cluster (ENABLE_ZONAL_SHIFT), as the AWS provider v1.15.2's arczonalshift provider: the
// shifts of the cluster's ARN, by the zone ID they move traffic away from. An applied shift
// not yet expired makes the zone's offerings unavailable and keeps the controller's calls out
// of it. A nil *zonalShifts (the setting off) shifts nothing.
type zonalShifts struct {
	clients    *Clients
	clusterARN string
	clock      clock.PassiveClock

	mu     sync.RWMutex
	shifts map[string]zonalShift
}

// zonalShift is one zone's shift.
type zonalShift struct {
	expiry  time.Time
	applied bool
}

// EnableZonalShift turns zonal shift handling on (ENABLE_ZONAL_SHIFT), as the AWS provider
// v1.15.2 at start: it reads the cluster's ARN (EKS DescribeCluster) and the cluster's zonal
// shifts (ARC GetManagedResource). A cluster ARC does not manage (zonal shift off on the EKS
// cluster) or a call refused is an error, which stops the controller as it stops Karpenter's.
func (p *Provider) EnableZonalShift(ctx context.Context) error {
	out, err := p.clients.EKS.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(p.opts.ClusterName)})
	if err != nil {
		return fmt.Errorf("zonal shift: describing cluster %s: %w", p.opts.ClusterName, err)
	}
	if out.Cluster == nil || out.Cluster.Arn == nil {
		return fmt.Errorf("zonal shift: EKS reports no ARN for cluster %s", p.opts.ClusterName)
	}
	z := &zonalShifts{clients: p.clients, clusterARN: *out.Cluster.Arn, clock: p.opts.Clock, shifts: map[string]zonalShift{}}
	if err := z.update(ctx); err != nil {
		return fmt.Errorf("cluster %s is not found in ARC zonal shift: check that zonal shift is enabled on the EKS cluster and that the controller may call arc-zonal-shift:GetManagedResource: %w", z.clusterARN, err)
	}
	p.zonalShifts = z
	return nil
}

// update reads the cluster's zonal shifts. As the AWS provider's, a resource with no shift
// forgets every shift; otherwise the shifts read replace those of their zones.
func (z *zonalShifts) update(ctx context.Context) error {
	out, err := z.clients.ARCZonalShift.GetManagedResource(ctx, &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String(z.clusterARN)})
	if err != nil {
		return fmt.Errorf("getting zonal shifts: %w", err)
	}
	read := map[string]zonalShift{}
	for _, s := range out.ZonalShifts {
		if s.AwayFrom == nil || s.ExpiryTime == nil {
			continue
		}
		read[*s.AwayFrom] = zonalShift{expiry: *s.ExpiryTime, applied: s.AppliedStatus == arctypes.AppliedStatusApplied}
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if len(read) == 0 {
		z.shifts = map[string]zonalShift{}
	} else {
		maps.Copy(z.shifts, read)
	}
	return nil
}

// shifted reports whether traffic is shifted away from the zone ID now.
func (z *zonalShifts) shifted(zoneID string) bool {
	if z == nil || zoneID == "" {
		return false
	}
	z.mu.RLock()
	defer z.mu.RUnlock()
	s, ok := z.shifts[zoneID]
	return ok && s.applied && s.expiry.After(z.clock.Now())
}

// shiftedZones are the zone IDs shifted away from now, sorted.
func (z *zonalShifts) shiftedZones() []string {
	if z == nil {
		return nil
	}
	z.mu.RLock()
	defer z.mu.RUnlock()
	var out []string
	for id, s := range z.shifts {
		if s.applied && s.expiry.After(z.clock.Now()) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// apply makes the offerings in shifted zones unavailable (cloudprovider.WithUnavailable): the
// shifted zones are read once, not per offering.
func (z *zonalShifts) apply(types []*cloudprovider.InstanceType) []*cloudprovider.InstanceType {
	shifted := z.shiftedZones()
	if len(shifted) == 0 {
		return types
	}
	return cloudprovider.WithUnavailable(types, func(_ *cloudprovider.InstanceType, o cloudprovider.Offering) bool {
		return slices.Contains(shifted, o.ZoneID)
	})
}

// refuseInShiftedZone is the error of a call the controller does not make into a zone traffic
// is shifted away from (terminate, reboot, tag), as the AWS provider v1.15.2's, so as not to
// add retries against an impaired zone; nil outside one, and for a claim without an instance.
// The zone comes from the claim's labels.
func (p *Provider) refuseInShiftedZone(claim *karpv1.NodeClaim, what string) error {
	zoneID := claim.Labels[awsv1.LabelTopologyZoneID]
	if !p.zonalShifts.shifted(zoneID) {
		return nil
	}
	instanceID, err := instanceIDOf(claim.Status.ProviderID)
	if err != nil {
		return nil
	}
	return fmt.Errorf("instance %s is in zonally shifted availability zone %s (%s), skipping %s", instanceID, claim.Labels[corev1.LabelTopologyZone], zoneID, what)
}

// ZonalShiftController polls the cluster's zonal shifts every 30 seconds, as the AWS provider
// v1.15.2's zonalshift controller, and says on each NodePool that may launch into a zone when
// a shift away from it starts (Warning ZonalShiftActive) and ends (Normal ZonalShiftCleared).
// It runs only with EnableZonalShift.
type ZonalShiftController struct {
	provider *Provider
	events   *kevents.Recorder
	previous []string
	// Interval is the time between two polls (30s).
	Interval time.Duration
}

// NewZonalShiftController returns the controller; events may be nil.
func NewZonalShiftController(p *Provider, events record.EventRecorder) *ZonalShiftController {
	return &ZonalShiftController{provider: p, events: kevents.NewRecorder(events, p.opts.Clock), Interval: 30 * time.Second}
}

// Register runs the controller on the elected leader when zonal shifts are handled.
func (c *ZonalShiftController) Register(mgr manager.Manager) error {
	if c.provider.zonalShifts == nil {
		return nil
	}
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		for {
			if err := c.Poll(ctx); err != nil && ctx.Err() == nil {
				log.FromContext(ctx).WithName("aws.zonalshift").Error(err, "polling zonal shifts")
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(c.Interval):
			}
		}
	}))
}

// Poll reads the zonal shifts once and publishes the Events of the zones whose shift started
// or ended since the last successful poll.
func (c *ZonalShiftController) Poll(ctx context.Context) error {
	z := c.provider.zonalShifts
	if err := z.update(ctx); err != nil {
		return err
	}
	current := z.shiftedZones()
	started := slices.DeleteFunc(slices.Clone(current), func(id string) bool { return slices.Contains(c.previous, id) })
	ended := slices.DeleteFunc(slices.Clone(c.previous), func(id string) bool { return slices.Contains(current, id) })
	if len(started)+len(ended) > 0 {
		if err := c.publish(ctx, started, ended); err != nil {
			return err
		}
	}
	// Only after the Events are out, so that a failed publication is tried again.
	c.previous = current
	return nil
}

// publish records the Events of the started and ended shifts on the NodePools that may launch
// into their zones: their EC2NodeClass has a subnet there, and their requirements allow the
// zone's name and ID.
func (c *ZonalShiftController) publish(ctx context.Context, started, ended []string) error {
	kube := c.provider.opts.KubeClient
	var pools karpv1.NodePoolList
	if err := kube.List(ctx, &pools); err != nil {
		return fmt.Errorf("listing nodepools: %w", err)
	}
	for i := range pools.Items {
		np := &pools.Items[i]
		ref := np.Spec.Template.Spec.NodeClassRef
		if ref == nil {
			continue
		}
		nc := &awsv1.EC2NodeClass{}
		if err := kube.Get(ctx, client.ObjectKey{Name: ref.Name}, nc); err != nil {
			return fmt.Errorf("getting ec2nodeclass %s of nodepool %s: %w", ref.Name, np.Name, err)
		}
		reqs, err := scheduling.FromNodePoolRequirements(np.Spec.Template.Spec.Requirements...)
		if err != nil {
			continue
		}
		zones := cloudprovider.ZoneIDsOf(nc.Status.Subnets) // zone → zone ID
		for _, ids := range []struct {
			ids     []string
			started bool
		}{{started, true}, {ended, false}} {
			for _, id := range ids.ids {
				zone, ok := zoneOfID(zones, id)
				if !ok || !allows(reqs, corev1.LabelTopologyZone, zone) || !allows(reqs, awsv1.LabelTopologyZoneID, id) {
					continue
				}
				if ids.started {
					c.events.Publish(kevents.Event{InvolvedObject: np, Type: corev1.EventTypeWarning, Reason: "ZonalShiftActive",
						Message:      fmt.Sprintf("Zonal shift detected: offerings in zone %s (%s) are unavailable for this NodePool", zone, id),
						DedupeValues: []string{string(np.UID), id}})
				} else {
					c.events.Publish(kevents.Event{InvolvedObject: np, Type: corev1.EventTypeNormal, Reason: "ZonalShiftCleared",
						Message:      fmt.Sprintf("Zonal shift cleared: offerings in zone %s (%s) are restored for this NodePool", zone, id),
						DedupeValues: []string{string(np.UID), id}})
				}
			}
		}
	}
	return nil
}

// allows reports whether requirements allow the label's value (a label they do not name is
// any value).
func allows(reqs scheduling.Requirements, key, value string) bool {
	r, ok := reqs.Get(key)
	return !ok || r.Has(value)
}

// zoneOfID is the zone whose ID is id.
func zoneOfID(zoneIDs map[string]string, id string) (string, bool) {
	for zone, zid := range zoneIDs {
		if zid == id {
			return zone, true
		}
	}
	return "", false
}
