package binder_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/simulate/binder"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// zonalNodes creates a Ready node of 4 cpu in each zone, named node-<zone>.
func zonalNodes(t *testing.T, zones ...string) {
	t.Helper()
	for _, z := range zones {
		readyNode(t, "node-"+z, "4")
		node := &corev1.Node{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "node-" + z}, node); err != nil {
			t.Fatal(err)
		}
		node.Labels[corev1.LabelTopologyZone] = z
		if err := env.Client.Update(context.Background(), node); err != nil {
			t.Fatal(err)
		}
	}
}

func storageClass(name string, mode storagev1.VolumeBindingMode, zones ...string) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "ebs.csi.aws.com", VolumeBindingMode: &mode}
	if len(zones) > 0 {
		sc.AllowedTopologies = []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
			{Key: "topology.ebs.csi.aws.com/zone", Values: zones},
		}}}
	}
	return sc
}

func claim(name, class, volume string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &class, VolumeName: volume,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
		},
	}
}

// zonalVolume is a volume made beforehand, in zone.
func zonalVolume(name, zone string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: name}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}},
			}}}},
		},
	}
}

// storage creates the objects, all purged when the test ends.
func storage(t *testing.T, objs ...client.Object) {
	t.Helper()
	t.Cleanup(func() {
		env.Purge(t, []client.ObjectList{&corev1.PersistentVolumeClaimList{}, &corev1.PersistentVolumeList{}, &storagev1.StorageClassList{}})
	})
	for _, o := range objs {
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// mounting is a pod of 1 cpu that mounts the claims.
func mounting(name string, claims ...string) *corev1.Pod {
	pod := builders.Pod(builders.PodOptions{Name: name, CPU: "1"})
	for _, c := range claims {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: c, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c},
		}})
	}
	return pod
}

func getClaim(t *testing.T, name string) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {
	t.Helper()
	ctx := context.Background()
	pvc := &corev1.PersistentVolumeClaim{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, pvc); err != nil {
		t.Fatal(err)
	}
	if pvc.Spec.VolumeName == "" {
		return pvc, nil
	}
	pv := &corev1.PersistentVolume{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
		t.Fatal(err)
	}
	return pvc, pv
}

func volumeZone(pv *corev1.PersistentVolume) string {
	if pv == nil || pv.Spec.NodeAffinity == nil {
		return ""
	}
	return pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values[0]
}

// TestVolumesPlacePods: the binder binds claims as Kubernetes would and puts each pod where its
// volumes are: a WaitForFirstConsumer claim gets a volume in the zone of the node its pod goes
// to, within the class's allowedTopologies (though first fit would take us-east-1a's node, and
// the two pods sharing a claim land in one zone); a claim bound beforehand to a volume in
// us-east-1b takes its pod there, and so does one a volume in us-east-1a is reserved for
// (claimRef); an Immediate class binds at once, in one of Options.Zones.
func TestVolumesPlacePods(t *testing.T) {
	ctx := context.Background()
	zonalNodes(t, "us-east-1a", "us-east-1b", "us-east-1c")
	reserved := zonalVolume("pv-a", "us-east-1a")
	reserved.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "default", Name: "reserved"}
	storage(t, reserved, claim("reserved", "", ""),
		storageClass("late", storagev1.VolumeBindingWaitForFirstConsumer, "us-east-1b", "us-east-1c"),
		storageClass("now", storagev1.VolumeBindingImmediate),
		zonalVolume("pv-b", "us-east-1b"),
		claim("late", "late", ""), claim("shared", "late", ""), claim("prebound", "", "pv-b"), claim("now", "now", ""))
	b := binder.New(env.Client, clock.RealClock{}, binder.Options{Zones: []string{"us-east-1c"}})

	// Claims that need no pod are bound in any step.
	if _, err := b.Step(ctx); err != nil {
		t.Fatal(err)
	}
	for name, zone := range map[string]string{"prebound": "us-east-1b", "now": "us-east-1c", "reserved": "us-east-1a"} {
		pvc, pv := getClaim(t, name)
		if pvc.Status.Phase != corev1.ClaimBound || pv == nil || pv.Status.Phase != corev1.VolumeBound || volumeZone(pv) != zone || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID {
			t.Errorf("claim %s: %s, volume %v in %q; want bound at once to a volume in %s", name, pvc.Status.Phase, pv, volumeZone(pv), zone)
		}
	}
	if pvc, _ := getClaim(t, "late"); pvc.Spec.VolumeName != "" {
		t.Errorf("a WaitForFirstConsumer claim bound to %s before its pod", pvc.Spec.VolumeName)
	}

	pods := []*corev1.Pod{mounting("late", "late"), mounting("shared-1", "shared"), mounting("shared-2", "shared"), mounting("prebound", "prebound"), mounting("now", "now"), mounting("reserved", "reserved")}
	createPods(t, "", pods...)
	res, err := b.Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Bound["default/shared-2"] == "" {
		// Bound to another zone's node than shared-1's volume after all: the next step places it.
		if res, err = b.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	zoneOf := func(pod string) string { return getPod(t, pod).Spec.NodeName[len("node-"):] }
	for _, pod := range pods {
		if getPod(t, pod.Name).Spec.NodeName == "" {
			t.Fatalf("pod %s not bound", pod.Name)
		}
	}
	pvc, pv := getClaim(t, "late")
	if z := zoneOf("late"); z == "us-east-1a" || volumeZone(pv) != z || pvc.Status.Phase != corev1.ClaimBound || pvc.Annotations["volume.kubernetes.io/selected-node"] != "node-"+z {
		t.Errorf("pod late in %s, its volume in %q (%s, selected node %q); want both in us-east-1b or -c", z, volumeZone(pv), pvc.Status.Phase, pvc.Annotations["volume.kubernetes.io/selected-node"])
	}
	if _, pv := getClaim(t, "shared"); zoneOf("shared-1") != volumeZone(pv) || zoneOf("shared-2") != volumeZone(pv) {
		t.Errorf("pods sharing a claim in %s and %s, its volume in %s", zoneOf("shared-1"), zoneOf("shared-2"), volumeZone(pv))
	}
	if zoneOf("prebound") != "us-east-1b" || zoneOf("now") != "us-east-1c" || zoneOf("reserved") != "us-east-1a" {
		t.Errorf("pods prebound in %s, now in %s and reserved in %s, want their volumes' us-east-1b, -1c and -1a", zoneOf("prebound"), zoneOf("now"), zoneOf("reserved"))
	}
}

// TestMissingVolumesAreReported: a pod whose claim, StorageClass or volume does not exist, or
// whose claim has no class to bind it, binds nowhere and is marked Unschedulable with the
// kube-scheduler's message.
func TestMissingVolumesAreReported(t *testing.T) {
	ctx := context.Background()
	zonalNodes(t, "us-east-1a")
	storage(t, claim("classless", "fast", ""), claim("lost", "", "pv-gone"), claim("nameless", "", ""))
	want := map[string]string{
		"no-claim":  `persistentvolumeclaim "nowhere" not found`,
		"no-class":  `storageclass.storage.k8s.io "fast" not found`,
		"no-volume": `persistentvolume "pv-gone" not found`,
		"unbound":   "pod has unbound immediate PersistentVolumeClaims",
	}
	createPods(t, "", mounting("no-claim", "nowhere"), mounting("no-class", "classless"), mounting("no-volume", "lost"), mounting("unbound", "nameless"))
	res, err := binder.New(env.Client, clock.RealClock{}, binder.Options{}).Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Bound) != 0 || len(res.Unschedulable) != len(want) {
		t.Fatalf("bound %v, unschedulable %v; want the 4 pods unschedulable", res.Bound, res.Unschedulable)
	}
	for name, message := range want {
		pod := getPod(t, name)
		var got string
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				got = c.Message
			}
		}
		if got != message {
			t.Errorf("pod %s: unschedulable with %q, want %q", name, got, message)
		}
	}
}
