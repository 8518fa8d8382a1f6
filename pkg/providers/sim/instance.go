package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// ProviderIDPrefix starts every provider ID of the simulated cloud; the full form is
// sim:///<zone>/<instance-id>.
const ProviderIDPrefix = "sim:///"

// InstanceState is an instance's lifecycle state, named as EC2 names them.
type InstanceState string

// The states an instance goes through.
const (
	// InstanceStatePending: launched, not yet booted (the launch latency has not passed).
	InstanceStatePending InstanceState = "pending"
	// InstanceStateRunning: booted; its kubelet may register a Node.
	InstanceStateRunning InstanceState = "running"
	// InstanceStateTerminated: deleted or interrupted; it no longer exists for the provider.
	InstanceStateTerminated InstanceState = "terminated"
)

// Why instances terminate, in Instance.TerminationReason.
const (
	// TerminationReasonDeleted: the provider's Delete terminated it.
	TerminationReasonDeleted = "Deleted"
	// TerminationReasonInterrupted: a spot interruption's notice ran out.
	TerminationReasonInterrupted = "SpotInterruption"
	// TerminationReasonLost: it vanished out of band (FaultPlan.InstanceLossRate).
	TerminationReasonLost = "Lost"
	// TerminationReasonCapacityBlockEnded: it ran in a Capacity Block (Reservation), which EC2
	// reclaims at its end.
	TerminationReasonCapacityBlockEnded = "CapacityBlockEnded"
)

// Instance is a snapshot of one simulated instance, for inspection and reports. It is a copy:
// changing it changes nothing in the cloud.
type Instance struct {
	// ID is the instance ID, such as i-0b7c2e1f4a9d3c5e8.
	ID string
	// ProviderID is sim:///<zone>/<ID>.
	ProviderID string
	// State is the state at the time of the snapshot.
	State InstanceState
	// InstanceType, Zone and CapacityType name the offering it runs as: the one it was
	// launched as, but on-demand once the On-Demand Capacity Reservation it launched into has
	// ended.
	InstanceType, Zone, CapacityType string
	// Price is what it costs now, in $/hour: its offering's price at launch, or the on-demand
	// price once its reservation has ended.
	Price float64
	// ReservationID is the capacity reservation it launched into (empty for none), kept once
	// the reservation has ended; ReservationEnd is when that reservation ends (zero for never):
	// a Capacity Block's instances are terminated then, an On-Demand Capacity Reservation's
	// turn on-demand.
	ReservationID  string
	ReservationEnd time.Time
	// ReservedPrice is its price while it ran in its reservation, and OnDemandSince when that
	// reservation ended and it turned on-demand; zero while it still runs in one, or never did.
	ReservedPrice float64
	OnDemandSince time.Time
	// ImageID is the machine image it booted.
	ImageID string
	// Hostname is its private DNS name, which its kubelet registers as the Node's name.
	Hostname string
	// PrivateIP is its private IPv4 address.
	PrivateIP string
	// LaunchTime is when Create launched it.
	LaunchTime time.Time
	// RunningTime is when it is (or was) running: LaunchTime plus the launch latency.
	RunningTime time.Time
	// TerminationTime is when it terminated; zero while it lives.
	TerminationTime time.Time
	// TerminationReason says why it terminated (TerminationReasonDeleted or
	// TerminationReasonInterrupted); empty while it lives.
	TerminationReason string
	// InterruptionTime is when it receives (or received) a spot interruption notice; zero when
	// none is due.
	InterruptionTime time.Time
	// LossTime is when it vanishes (or vanished) out of band, drawn at launch from
	// FaultPlan.InstanceLossRate; zero when no loss is due.
	LossTime time.Time
	// NodeClaimName is the NodeClaim it was launched for.
	NodeClaimName string
	// NodePoolName is the NodeClaim's NodePool, if known.
	NodePoolName string
	// NodeClassName is the EC2NodeClass it was launched from.
	NodeClassName string
	// Labels are the node labels the instance implies: instance type, zone, region, capacity
	// type, arch, os, the instance type's other labels, NodePool, NodeClass and tenancy.
	Labels map[string]string
	// Capacity and Allocatable are the node's resources under its NodeClass's kubelet settings.
	Capacity, Allocatable corev1.ResourceList
	// Bootstrap is what the instance's user data tells its kubelet, captured at launch.
	Bootstrap Bootstrap
	// SubnetHash and SecurityGroupHash identify the NodeClass's subnet and security group
	// selector terms at launch; drift compares them with the current ones.
	SubnetHash, SecurityGroupHash string
	// Conditions are the faults its Node reports (Cloud.MakeUnhealthy, and the fault plan's
	// node failure once it has happened); none while it is healthy.
	Conditions []NodeCondition
	// FailureTime is when the fault plan's node failure happens (or happened) to it; zero when
	// none is due.
	FailureTime time.Time
	// Reboots counts the reboots it was asked for (Cloud.Reboot); RebootedUntil is when the
	// last one is over: until then its Node reports NotReady, and from then on a new boot ID.
	Reboots       int
	RebootedUntil time.Time
	// RebootOperation is the operation ID of the last reboot, so that a repeated request for
	// it reboots nothing.
	RebootOperation string
}

// Rebooting reports whether the instance is rebooting at now.
func (i Instance) Rebooting(now time.Time) bool { return now.Before(i.RebootedUntil) }

// BootID is the boot ID its kubelet reports at now: a new one once each reboot is over.
func (i Instance) BootID(now time.Time) string {
	boots := i.Reboots
	if i.Rebooting(now) {
		boots--
	}
	if boots == 0 {
		return digest("boot", i.ID)[:32]
	}
	return digest("boot", i.ID, strconv.Itoa(boots))[:32]
}

// Bootstrap is the kubelet configuration an instance's user data carries: the labels and taints
// of the NodeClaim it was launched for, as they were at launch.
type Bootstrap struct {
	// Labels are the NodeClaim's labels.
	Labels map[string]string
	// Taints are the NodeClaim's taints.
	Taints []corev1.Taint
	// StartupTaints are the NodeClaim's startup taints.
	StartupTaints []corev1.Taint
}

// instance is the cloud's record of one instance. Its fields are written only under the
// cloud's lock.
type instance struct {
	seq                              uint64 // launch order
	id, providerID                   string
	instanceType, zone, capacityType string
	arch                             string
	price                            float64
	imageID                          string
	hostname, privateIP              string
	launchTime, runningTime          time.Time
	terminationTime                  time.Time
	terminationReason                string
	interruptAt                      time.Time
	lossAt                           time.Time
	// reservationID is the reservation it launched into and reservationEnd when that ends
	// (zero for never); reservedPrice and onDemandSince are Instance's.
	reservationID           string
	reservationEnd          time.Time
	reservedPrice           float64
	onDemandSince           time.Time
	claimName, nodePoolName string
	nodeClassName           string
	// unmanaged marks an adopted instance Karpenter does not manage (Adopted.Unmanaged).
	unmanaged                     bool
	labels                        map[string]string
	capacity, allocatable         corev1.ResourceList
	subnetHash, securityGroupHash string
	bootstrap                     Bootstrap
	// conditions are the faults injected into its Node; failAt is when the fault plan's node
	// failure happens (zero for never).
	conditions []NodeCondition
	failAt     time.Time
	// reboots, rebootedUntil and rebootOperation are Instance's.
	reboots         int
	rebootedUntil   time.Time
	rebootOperation string
}

func (in *instance) offering() cloudprovider.OfferingID {
	return cloudprovider.OfferingID{InstanceType: in.instanceType, Zone: in.zone, CapacityType: in.capacityType, ReservationID: in.labels[awsv1.LabelCapacityReservationID]}
}

func (in *instance) terminated() bool { return !in.terminationTime.IsZero() }

func (in *instance) state(now time.Time) InstanceState {
	switch {
	case in.terminated():
		return InstanceStateTerminated
	case now.Before(in.runningTime):
		return InstanceStatePending
	default:
		return InstanceStateRunning
	}
}

// snapshot copies the instance as it is at now; failure is the fault plan's node failure.
func (in *instance) snapshot(now time.Time, failure NodeCondition) Instance {
	return Instance{
		ID:                in.id,
		ProviderID:        in.providerID,
		State:             in.state(now),
		InstanceType:      in.instanceType,
		Zone:              in.zone,
		CapacityType:      in.capacityType,
		Price:             in.price,
		ReservationID:     in.reservationID,
		ReservationEnd:    in.reservationEnd,
		ReservedPrice:     in.reservedPrice,
		OnDemandSince:     in.onDemandSince,
		ImageID:           in.imageID,
		Hostname:          in.hostname,
		PrivateIP:         in.privateIP,
		LaunchTime:        in.launchTime,
		RunningTime:       in.runningTime,
		TerminationTime:   in.terminationTime,
		TerminationReason: in.terminationReason,
		InterruptionTime:  in.interruptAt,
		LossTime:          in.lossAt,
		NodeClaimName:     in.claimName,
		NodePoolName:      in.nodePoolName,
		NodeClassName:     in.nodeClassName,
		Labels:            maps.Clone(in.labels),
		Capacity:          in.capacity.DeepCopy(),
		Allocatable:       in.allocatable.DeepCopy(),
		Bootstrap: Bootstrap{
			Labels:        maps.Clone(in.bootstrap.Labels),
			Taints:        slices.Clone(in.bootstrap.Taints),
			StartupTaints: slices.Clone(in.bootstrap.StartupTaints),
		},
		SubnetHash:        in.subnetHash,
		SecurityGroupHash: in.securityGroupHash,
		Conditions:        in.nodeConditions(now, failure),
		FailureTime:       in.failAt,
		Reboots:           in.reboots,
		RebootedUntil:     in.rebootedUntil,
		RebootOperation:   in.rebootOperation,
	}
}

// inCapacityBlock reports whether it runs in a Capacity Block, which EC2 reclaims at its end.
func (in *instance) inCapacityBlock() bool {
	return in.labels[awsv1.LabelCapacityReservationType] == string(awsv1.CapacityReservationTypeCapacityBlock)
}

// Spend is what the instance cost from its launch to until: its reserved price until its
// reservation ended, its price after.
func (i Instance) Spend(until time.Time) float64 {
	return spend(i.LaunchTime, until, i.Price, i.OnDemandSince, i.ReservedPrice)
}

// spend is the dollars an instance launched at launch costs until until, at price per hour,
// or at reservedPrice before onDemandSince when that is set.
func spend(launch, until time.Time, price float64, onDemandSince time.Time, reservedPrice float64) float64 {
	hours := func(from, to time.Time) float64 { return max(to.Sub(from).Hours(), 0) }
	if onDemandSince.IsZero() {
		return price * hours(launch, until)
	}
	reservedUntil := until
	if onDemandSince.Before(until) {
		reservedUntil = onDemandSince
	}
	return reservedPrice*hours(launch, reservedUntil) + price*hours(onDemandSince, until)
}

// nodeClaim is the provider's view of the instance, as Get and List return it.
func (in *instance) nodeClaim() *karpv1.NodeClaim {
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:              in.claimName,
			CreationTimestamp: metav1.NewTime(in.launchTime),
		},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{in.instanceType}},
				{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{in.zone}},
				{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{in.capacityType}},
			},
			NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: nodeClassKind, Name: in.nodeClassName},
		},
	}
	in.stamp(claim)
	return claim
}

// launched returns a copy of claim that says what was launched for it.
func (in *instance) launched(claim *karpv1.NodeClaim) *karpv1.NodeClaim {
	out := claim.DeepCopy()
	in.stamp(out)
	return out
}

// stamp writes the instance's labels and status onto claim.
func (in *instance) stamp(claim *karpv1.NodeClaim) {
	if claim.Labels == nil {
		claim.Labels = make(map[string]string, len(in.labels))
	}
	maps.Copy(claim.Labels, in.labels)
	claim.Status.ProviderID = in.providerID
	claim.Status.ImageID = in.imageID
	claim.Status.Capacity = in.capacity.DeepCopy()
	claim.Status.Allocatable = in.allocatable.DeepCopy()
}

// ProviderID returns the provider ID of the instance with the given ID in zone.
func ProviderID(zone, instanceID string) string {
	return ProviderIDPrefix + zone + "/" + instanceID
}

// ParseProviderID splits a provider ID of the simulated cloud into its zone and instance ID.
func ParseProviderID(providerID string) (zone, instanceID string, err error) {
	rest, ok := strings.CutPrefix(providerID, ProviderIDPrefix)
	if !ok {
		return "", "", fmt.Errorf("provider id %q does not start with %s", providerID, ProviderIDPrefix)
	}
	zone, instanceID, ok = strings.Cut(rest, "/")
	if !ok || zone == "" || instanceID == "" || strings.Contains(instanceID, "/") {
		return "", "", fmt.Errorf("provider id %q is not %s<zone>/<instance-id>", providerID, ProviderIDPrefix)
	}
	return zone, instanceID, nil
}

// digest returns the hex SHA-256 of the parts, separated so that no two part lists collide.
func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(strconv.Itoa(len(p))))
		h.Write([]byte{':'})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// instanceID is the n-th instance ID of a seed: i- and 17 hex digits, as EC2's.
func instanceID(seed int64, n uint64) string {
	return "i-" + digest("instance", strconv.FormatInt(seed, 10), strconv.FormatUint(n, 10))[:17]
}

// privateIP is the n-th address (n ≥ 1) handed out in the zone with the given index: each zone
// has a /12 of 10.0.0.0/8, so addresses never repeat within 2^20 launches per zone.
func privateIP(zoneIndex int, n int) string {
	n += 9 // skip the addresses a VPC subnet reserves, and a few more
	return fmt.Sprintf("10.%d.%d.%d", (zoneIndex%16)*16+((n>>16)&15), (n>>8)&255, n&255)
}

// hostname is the private DNS name of an address in region.
func hostname(ip, region string) string {
	return "ip-" + strings.ReplaceAll(ip, ".", "-") + "." + region + ".compute.internal"
}
