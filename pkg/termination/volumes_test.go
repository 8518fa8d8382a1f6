package termination

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// volume creates a PersistentVolume and a claim of the test's namespace bound to it, and a
// VolumeAttachment of it to node, as the attach-detach controller would. It returns the
// VolumeAttachment's name.
func (f *fixture) volume(name, node string) string {
	f.t.Helper()
	pvName := f.ns + "-" + name
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "vol-" + name}},
		},
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			VolumeName:  pvName,
		},
	}
	va := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: "csi-" + pvName},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "ebs.csi.aws.com", NodeName: node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pvName}},
	}
	if err := env.Client.Create(f.ctx, pv); err != nil {
		f.t.Fatalf("creating pv: %v", err)
	}
	if err := env.Client.Create(f.ctx, pvc); err != nil {
		f.t.Fatalf("creating pvc: %v", err)
	}
	if err := env.Client.Create(f.ctx, va); err != nil {
		f.t.Fatalf("creating volumeattachment: %v", err)
	}
	f.t.Cleanup(func() { forceDelete(f.t, va); forceDelete(f.t, pv) })
	return va.Name
}

// detach deletes a VolumeAttachment, as the attach-detach controller does once the volume's
// pod is gone.
func (f *fixture) detach(name string) {
	f.t.Helper()
	forceDelete(f.t, &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// condition returns the claim's condition of the type; nil when it has none.
func (f *fixture) condition(claim, conditionType string) *metav1.Condition {
	f.t.Helper()
	c := f.claim(claim)
	if c == nil {
		f.t.Fatalf("nodeclaim %s is gone", claim)
	}
	return meta.FindStatusCondition(c.Status.Conditions, conditionType)
}

// The instance of a drained node waits for the VolumeAttachments of the drained pods' volumes
// to go, as Karpenter's: VolumesDetached is Unknown (AwaitingVolumeDetachment, with an Event
// on the Node) meanwhile and True after; a volume of a pod the drain leaves does not hold it.
func TestTerminationAwaitsVolumeDetachment(t *testing.T) {
	f := newFixture(t)
	node := f.launch("volumes", nil)
	f.pod("db", node, podOptions{})
	attachment := f.volume("data", node)
	agentVolume := f.volume("agent-data", node)
	f.pod("agent", node, podOptions{owner: "DaemonSet", claims: []string{"agent-data"}})
	f.deleteClaim("volumes")

	if c := f.condition("volumes", karpv1.ConditionTypeDrained); c != nil {
		t.Fatalf("Drained before the termination began: %+v", c)
	}
	f.reconcile("volumes")
	if c := f.condition("volumes", karpv1.ConditionTypeDrained); c == nil || c.Status != metav1.ConditionUnknown || c.Reason != ReasonDraining {
		t.Errorf("Drained while draining = %+v, want Unknown %s", c, ReasonDraining)
	}
	for range 3 {
		f.clock.Step(f.reconcile("volumes").RequeueAfter)
	}
	if c := f.condition("volumes", karpv1.ConditionTypeDrained); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("Drained = %+v, want True", c)
	}
	if c := f.condition("volumes", karpv1.ConditionTypeVolumesDetached); c == nil || c.Status != metav1.ConditionUnknown || c.Reason != ReasonAwaitingVolumeDetachment {
		t.Errorf("VolumesDetached = %+v, want Unknown %s", c, ReasonAwaitingVolumeDetachment)
	}
	if n := f.finalizer.n.Load(); n != 0 {
		t.Fatalf("Finalize called %d times while a volume is attached", n)
	}
	f.expectEvent("Node/"+node, "Normal", EventReasonAwaitingVolumeDetachment, "Awaiting deletion of bound volumeattachments ("+attachment+")")
	for _, e := range f.events.Find(EventReasonAwaitingVolumeDetachment) {
		if e.Message != "Awaiting deletion of bound volumeattachments ("+attachment+")" {
			t.Errorf("event names %q; the daemon's volume %s must not hold the node", e.Message, agentVolume)
		}
	}

	f.detach(attachment)
	f.reconcile("volumes")
	if c := f.condition("volumes", karpv1.ConditionTypeVolumesDetached); c == nil || c.Status != metav1.ConditionTrue || c.Reason != karpv1.ConditionTypeVolumesDetached {
		t.Errorf("VolumesDetached = %+v, want True", c)
	}
	if f.finalizer.n.Load() == 0 {
		t.Error("not finalized once the volume was detached")
	}
	f.finish("volumes")
}

// The wait for volumes ends with the termination grace period: VolumesDetached is False
// (TerminationGracePeriodElapsed) and the instance is terminated.
func TestVolumeDetachmentWaitEndsWithGracePeriod(t *testing.T) {
	f := newFixture(t)
	grace := 2 * time.Minute
	node := f.launch("volumes-grace", &grace)
	f.volume("stuck", node)
	f.deleteClaim("volumes-grace")

	f.reconcile("volumes-grace")
	if c := f.condition("volumes-grace", karpv1.ConditionTypeVolumesDetached); c == nil || c.Status != metav1.ConditionUnknown {
		t.Fatalf("VolumesDetached = %+v, want Unknown", c)
	}
	claim := f.claim("volumes-grace")
	want := claim.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]
	f.expectEvent("Node/"+node, "Warning", EventReasonTerminationGracePeriodExpiring, "All pods will be deleted by "+want)
	f.expectEvent("NodeClaim/volumes-grace", "Warning", EventReasonTerminationGracePeriodExpiring, "All pods will be deleted by "+want)

	f.clock.SetTime(claim.DeletionTimestamp.Add(grace + time.Second))
	f.reconcile("volumes-grace")
	if c := f.condition("volumes-grace", karpv1.ConditionTypeVolumesDetached); c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonTerminationGracePeriodElapsed {
		t.Errorf("VolumesDetached = %+v, want False %s", c, ReasonTerminationGracePeriodElapsed)
	}
	if f.finalizer.n.Load() == 0 {
		t.Error("not finalized after the grace period")
	}
	f.finish("volumes-grace")
}
