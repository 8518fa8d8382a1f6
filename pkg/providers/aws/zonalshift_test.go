package aws

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/events"
	"github.com/openkarpenter/karpenter/pkg/providers/aws/fake"
)

// TestZonalShift: with ENABLE_ZONAL_SHIFT, a cluster ARC does not manage stops the
// controller; once it does, an applied shift away from a zone makes that zone's offerings
// unavailable, keeps terminations and reboots out of it and tells the NodePools that may
// launch there (ZonalShiftActive), until it is cancelled (ZonalShiftCleared) or expires. A
// shift ARC reports as not applied shifts nothing.
func TestZonalShift(t *testing.T) {
	f := newFixture(t)
	nc, np := f.seed004()
	if err := env.Client.Create(f.ctx, np); err != nil {
		t.Fatal(err)
	}
	err := f.provider.EnableZonalShift(f.ctx)
	if err == nil || !strings.Contains(err.Error(), "is not found in ARC zonal shift") || !strings.Contains(err.Error(), "ResourceNotFoundException") {
		t.Fatalf("a cluster without zonal shift: %v", err)
	}
	f.aws.RegisterZonalShift(testCluster)
	if err := f.provider.EnableZonalShift(f.ctx); err != nil {
		t.Fatal(err)
	}
	zones := map[string]string{}
	for _, s := range nc.Status.Subnets {
		zones[s.Zone] = s.ZoneID
	}
	if zones["us-west-2a"] == "" {
		t.Fatalf("the NodeClass's subnets %v have no zone ID for us-west-2a", nc.Status.Subnets)
	}
	shiftedID := zones["us-west-2a"]
	available := func() map[string]int {
		t.Helper()
		its, err := f.provider.GetInstanceTypes(f.ctx, np)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, it := range its {
			for _, o := range it.Offerings {
				if o.Available {
					out[o.Zone]++
				}
			}
		}
		return out
	}
	rec := record.NewFakeRecorder(10)
	controller := NewZonalShiftController(f.provider, rec)
	poll := func() {
		t.Helper()
		if err := controller.Poll(f.ctx); err != nil {
			t.Fatal(err)
		}
	}
	expectEvent := func(want string) {
		t.Helper()
		select {
		case got := <-rec.Events:
			if got != want {
				t.Errorf("event %q, want %q", got, want)
			}
		default:
			t.Errorf("no event, want %q", want)
		}
	}
	before := available()
	if before["us-west-2a"] == 0 || before["us-west-2b"] == 0 {
		t.Fatalf("offerings by zone before any shift: %v", before)
	}

	// Applied: the zone's offerings go, the NodePool is told, and nothing is terminated or
	// rebooted there.
	f.aws.StartZonalShift(testCluster, fake.ZonalShift{AwayFrom: shiftedID, Expiry: f.clock.Now().Add(time.Hour)})
	poll()
	if got := available(); got["us-west-2a"] != 0 || got["us-west-2b"] != before["us-west-2b"] {
		t.Errorf("offerings by zone during the shift: %v, before %v", got, before)
	}
	expectEvent("Warning ZonalShiftActive Zonal shift detected: offerings in zone us-west-2a (" + shiftedID + ") are unavailable for this NodePool")
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "in-shifted-zone", Labels: map[string]string{corev1.LabelTopologyZone: "us-west-2a", awsv1.LabelTopologyZoneID: shiftedID}},
		Status:     karpv1.NodeClaimStatus{ProviderID: ProviderID("us-west-2a", "i-0123456789abcdef0")},
	}
	terminations := f.aws.Calls("TerminateInstances")
	if err := f.provider.Delete(f.ctx, claim); err == nil || !strings.Contains(err.Error(), "is in zonally shifted availability zone us-west-2a ("+shiftedID+"), skipping termination") {
		t.Errorf("Delete in the shifted zone: %v", err)
	}
	if err := f.provider.Reboot(f.ctx, claim, "op"); err == nil || !strings.Contains(err.Error(), "skipping reboot") {
		t.Errorf("Reboot in the shifted zone: %v", err)
	}
	if f.aws.Calls("TerminateInstances") != terminations || f.aws.Calls("RebootInstances") != 0 {
		t.Error("the shifted zone's instance was called")
	}
	poll()
	select {
	case e := <-rec.Events:
		t.Errorf("a poll with nothing new recorded %q", e)
	default:
	}

	// Cancelled: back, and said.
	f.aws.CancelZonalShifts(testCluster)
	poll()
	if got := available(); got["us-west-2a"] != before["us-west-2a"] {
		t.Errorf("offerings by zone after the shift: %v, before %v", got, before)
	}
	expectEvent("Normal ZonalShiftCleared Zonal shift cleared: offerings in zone us-west-2a (" + shiftedID + ") are restored for this NodePool")

	// Not applied: nothing shifts; applied, a shift ends when it expires.
	f.aws.StartZonalShift(testCluster, fake.ZonalShift{AwayFrom: shiftedID, Expiry: f.clock.Now().Add(time.Hour), NotApplied: true})
	poll()
	if got := available(); got["us-west-2a"] != before["us-west-2a"] {
		t.Errorf("a shift not applied took offerings: %v", got)
	}
	f.aws.CancelZonalShifts(testCluster)
	f.clock.Step(events.DefaultDedupeTimeout) // the same Event again is not deduplicated
	f.aws.StartZonalShift(testCluster, fake.ZonalShift{AwayFrom: shiftedID, Expiry: f.clock.Now().Add(time.Minute)})
	poll()
	expectEvent("Warning ZonalShiftActive Zonal shift detected: offerings in zone us-west-2a (" + shiftedID + ") are unavailable for this NodePool")
	f.clock.Step(2 * time.Minute)
	if got := available(); got["us-west-2a"] != before["us-west-2a"] {
		t.Errorf("an expired shift still takes offerings: %v", got)
	}
}
