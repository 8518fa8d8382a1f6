package simulate

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	ec2v1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
)

// reservedWorkload is a workload whose NodePool allows capacityTypes and whose EC2NodeClass
// has the terms, with the cloud block's reservations.
func reservedWorkload(capacityTypes, terms, reservations string, replicas int) string {
	manifests := strings.Replace(nodePoolManifests, "values: [on-demand]}", "values: ["+capacityTypes+"]}", 1)
	if terms != "" {
		manifests = strings.Replace(manifests, "    role: KarpenterNodeRole\n", "    role: KarpenterNodeRole\n    capacityReservationSelectorTerms: "+terms+"\n", 1)
	}
	return "name: reserved\nduration: 30m\nseed: 1\ncloud:\n  reservations: " + reservations + "\n" + manifests +
		"timeline:\n  - at: 0s\n    deploy: {name: web, replicas: " + strconv.Itoa(replicas) + ", pod: {cpu: 1500m, memory: 1Gi}}\n"
}

// The scheduler fills a reservation's free slots first, one node per slot and no more (as
// Karpenter's ReservationManager counts them), then launches on-demand; the report shows the
// reserved nodes, the reservation's use and what it is billed.
func TestReservationsFilledFirst(t *testing.T) {
	text := reservedWorkload("reserved, on-demand", "[{id: cr-0123456789abcdef0}]",
		"[{id: cr-0123456789abcdef0, instanceType: c6a.large, zone: us-east-1a, count: 3}]", 10)
	rep, _ := runEngine(t, "reserved.yaml", text)
	if rep.Pods.Scheduled != 10 {
		t.Fatalf("pods %+v", rep.Pods)
	}
	if len(rep.Reservations) != 1 {
		t.Fatalf("reservations %+v", rep.Reservations)
	}
	u := rep.Reservations[0]
	if u.Launched != 3 || u.Peak != 3 || u.Final != 3 || u.SlotPerHour <= 0 {
		t.Errorf("reservation use %+v, want its 3 slots filled and kept", u)
	}
	reserved := 0
	for _, n := range rep.NodeHistory {
		if n.CapacityType == karpv1.CapacityTypeReserved {
			reserved++
			if n.InstanceType != "c6a.large" || n.Zone != "us-east-1a" {
				t.Errorf("reserved node %s is %s in %s, want the reservation's c6a.large in us-east-1a", n.Name, n.InstanceType, n.Zone)
			}
		}
	}
	if reserved != 3 || rep.NodePools[0].Results.LaunchedReserved != 3 || rep.Series[len(rep.Series)-1].ReservedNodes != 3 {
		t.Errorf("%d reserved nodes (NodePool says %d, last sample %d), want 3", reserved, rep.NodePools[0].Results.LaunchedReserved, rep.Series[len(rep.Series)-1].ReservedNodes)
	}
	if len(rep.FailedLaunches) != 0 {
		t.Errorf("launches refused %+v: the scheduler planned more claims into the reservation than it has slots", rep.FailedLaunches)
	}
	var out strings.Builder
	if err := WriteText(&out, rep); err != nil {
		t.Fatal(err)
	}
	text2 := out.String()
	for _, want := range []string{"RESERVED", "Capacity reservations", "cr-0123456789abcdef0", "billed whether used or not"} {
		if !strings.Contains(text2, want) {
			t.Errorf("report text lacks %q:\n%s", want, text2)
		}
	}
}

// Without terms that select a declared reservation, or with the gate off, nothing is reserved
// and the report says why; a NodePool that does not allow reserved is named.
func TestReservationWarnings(t *testing.T) {
	for _, tc := range []struct {
		name, capacityTypes, terms, gates, want string
	}{
		{"no match", "reserved, on-demand", "[{id: cr-0fffffffffffffff0}]", "", "none of the workload's cloud.reservations match"},
		{"gate off", "reserved, on-demand", "[{id: cr-0123456789abcdef0}]", "featureGates: {ReservedCapacity: false}\n", "ReservedCapacity feature gate is off"},
		{"not allowed", "on-demand", "[{id: cr-0123456789abcdef0}]", "", "do not allow karpenter.sh/capacity-type reserved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := tc.gates + reservedWorkload(tc.capacityTypes, tc.terms, "[{id: cr-0123456789abcdef0, instanceType: c6a.large, zone: us-east-1a, count: 3}]", 2)
			rep, _ := runEngine(t, "reserved.yaml", text)
			if !slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.Contains(w, tc.want) }) {
				t.Errorf("warnings %q lack %q", rep.Warnings, tc.want)
			}
			for _, n := range rep.NodeHistory {
				if n.CapacityType == karpv1.CapacityTypeReserved {
					t.Errorf("node %s is reserved", n.Name)
				}
			}
		})
	}
}

// A reservation the cloud block gets wrong is refused with its file, line and field.
func TestReservationProblems(t *testing.T) {
	for _, tc := range []struct{ reservations, want string }{
		{"[{id: bad, instanceType: c6a.large, zone: us-east-1a, count: 1}]", "reserved.yaml:5: cloud.reservations[0]: capacity reservation id \"bad\""},
		{"[{id: cr-01, instanceType: c6a.huge, zone: us-east-1a, count: 1}]", "cloud.reservations[0].instanceType: \"c6a.huge\" is not an EC2 instance type"},
		{"[{id: cr-01, instanceType: c6a.large, zone: eu-west-1a, count: 1}]", "zone \"eu-west-1a\" is not one of the cloud's zones"},
		{"[{id: cr-01, instanceType: c6a.large, zone: us-east-1a, count: 0}]", "count 0 must be at least 1"},
		{"[{id: cr-01, instanceType: c6a.large, zone: us-east-1a, count: 1, end: 0s}]", "cloud.reservations[0].end: must be positive"},
		{"[{id: cr-01, instanceType: c6a.large, zone: us-east-1a, count: 1}, {id: cr-01, instanceType: c6a.large, zone: us-east-1a, count: 1}]", "cloud.reservations[1].id: \"cr-01\" is given twice"},
	} {
		_, err := ParseWorkload("reserved.yaml", []byte(reservedWorkload("reserved", "[{id: cr-01}]", tc.reservations, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.reservations, err, tc.want)
		}
	}
}

// An On-Demand Capacity Reservation that ends leaves its nodes running on-demand: from its end
// they are billed on-demand, the capacityreservation.capacitytype controller relabels their
// NodeClaims and Nodes on-demand (as the AWS provider v1.15.2's), and the report says when
// each turned and that the reservation ended with none left in it.
func TestOnDemandReservationEnds(t *testing.T) {
	text := reservedWorkload("reserved, on-demand", "[{id: cr-0123456789abcdef0}]",
		"[{id: cr-0123456789abcdef0, instanceType: c6a.large, zone: us-east-1a, count: 3, end: 10m}]", 3)
	rep, e := runEngine(t, "reserved.yaml", text)
	if len(rep.Reservations) != 1 {
		t.Fatalf("reservations %+v", rep.Reservations)
	}
	if u := rep.Reservations[0]; u.Launched != 3 || u.Peak != 3 || u.Final != 0 || u.EndSeconds == nil || *u.EndSeconds != 600 {
		t.Errorf("reservation use %+v, want 3 launched, 3 at once, none at the end, ended at 600s", u)
	}
	od, _ := catalog.Lookup("c6a.large")
	turned := 0
	for _, n := range rep.NodeHistory {
		if n.OnDemandAt == nil {
			continue
		}
		turned++
		if *n.OnDemandAt != 600 || n.CapacityType != karpv1.CapacityTypeReserved || n.PricePerHour != od.OnDemandPrice {
			t.Errorf("node %s: launched %s, on-demand at %v, $%v/h; want launched reserved, on-demand at 600s at $%v/h", n.Name, n.CapacityType, *n.OnDemandAt, n.PricePerHour, od.OnDemandPrice)
		}
		if n.RemovedAt == nil && n.Cost < od.OnDemandPrice/3-0.001 {
			t.Errorf("node %s cost $%v, want at least its 20 minutes on-demand", n.Name, n.Cost)
		}
	}
	if turned != 3 {
		t.Errorf("%d nodes turned on-demand, want 3", turned)
	}
	claims := &karpv1.NodeClaimList{}
	if err := e.kube.List(context.Background(), claims); err != nil {
		t.Fatal(err)
	}
	nodes := &corev1.NodeList{}
	if err := e.kube.List(context.Background(), nodes); err != nil {
		t.Fatal(err)
	}
	var labelSets []map[string]string
	for _, c := range claims.Items {
		labelSets = append(labelSets, c.Labels)
	}
	for _, n := range nodes.Items {
		labelSets = append(labelSets, n.Labels)
	}
	for _, labels := range labelSets {
		if labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeReserved || labels[ec2v1.LabelCapacityReservationID] != "" {
			t.Errorf("still labelled reserved after the reservation ended: %v", labels)
		}
	}
}
