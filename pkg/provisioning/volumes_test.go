package provisioning_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/provisioning"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// volumes creates a WaitForFirstConsumer StorageClass "zonal" (allowed in us-east-1a and -c,
// under the EBS CSI driver's zone key), an Immediate one "now", a PersistentVolume "pv-b" in
// us-east-1b (under the legacy beta zone label) and claims: "bound" on pv-b, "zonal", "now" and
// "nameless" unbound of the classes and of none, "lost" bound to a volume that does not exist
// and "classless" of a class that does not.
func volumes(t *testing.T) {
	t.Helper()
	zone := func(key string, values ...string) []corev1.NodeSelectorRequirement {
		return []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}}
	}
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	create(t, &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: "zonal"}, Provisioner: "ebs.csi.aws.com", VolumeBindingMode: &wffc,
		AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
			{Key: "topology.ebs.csi.aws.com/zone", Values: []string{"us-east-1a", "us-east-1c"}},
		}}},
	})
	create(t, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "now"}, Provisioner: "ebs.csi.aws.com"})
	storage := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}
	create(t, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-b"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity: storage, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "vol-b"}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
				{MatchExpressions: zone(corev1.LabelFailureDomainBetaZone, "us-east-1b")},
			}}},
		},
	})
	for _, c := range []struct{ name, class, volume string }{
		{"bound", "", "pv-b"}, {"zonal", "zonal", ""}, {"now", "now", ""}, {"nameless", "", ""}, {"lost", "", "pv-gone"}, {"classless", "fast", ""},
	} {
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: "default"},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeName: c.volume,
				StorageClassName: &c.class, Resources: corev1.VolumeResourceRequirements{Requests: storage},
			},
		}
		create(t, pvc)
	}
	t.Cleanup(func() {
		env.Purge(t, []client.ObjectList{&corev1.PersistentVolumeClaimList{}, &corev1.PersistentVolumeList{}, &storagev1.StorageClassList{}})
	})
}

// withClaims is a pending pod of one cpu that mounts the claims.
func withClaims(name string, claims ...string) *corev1.Pod {
	pod := builders.Pod(builders.PodOptions{Name: name, CPU: "1"})
	for _, c := range claims {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: c, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c},
		}})
	}
	return pod
}

// TestVolumeRequirements: a bound volume's node affinity and a WaitForFirstConsumer claim's
// allowed topologies, zone aliases read as topology.kubernetes.io/zone; a claim, volume or class
// that does not exist, or a claim only the PersistentVolume controller binds, not bound yet, is
// a MissingVolumeError worded as the kube-scheduler's.
func TestVolumeRequirements(t *testing.T) {
	volumes(t)
	for _, tc := range []struct {
		claims      []string
		want, error string
	}{
		{claims: []string{"bound"}, want: "topology.kubernetes.io/zone In [us-east-1b]"},
		{claims: []string{"zonal"}, want: "topology.kubernetes.io/zone In [us-east-1a us-east-1c]"},
		{claims: []string{"bound", "zonal"}, want: "topology.kubernetes.io/zone (no value and no absence satisfies it)"},
		{claims: []string{}, want: ""},
		{claims: []string{"zonal", "nameless"}, error: "pod has unbound immediate PersistentVolumeClaims"},
		{claims: []string{"now"}, error: "pod has unbound immediate PersistentVolumeClaims"},
		{claims: []string{"nowhere"}, error: `persistentvolumeclaim "nowhere" not found`},
		{claims: []string{"lost"}, error: `persistentvolume "pv-gone" not found`},
		{claims: []string{"zonal", "classless"}, error: `storageclass.storage.k8s.io "fast" not found`},
	} {
		reqs, err := provisioning.VolumeRequirements(context.Background(), env.Client, withClaims("p", tc.claims...))
		if tc.error != "" {
			if !provisioning.IsMissingVolume(err) || err.Error() != tc.error {
				t.Errorf("claims %v: error %v, want a missing volume: %s", tc.claims, err, tc.error)
			}
			continue
		}
		if err != nil || reqs.String() != tc.want {
			t.Errorf("claims %v: %q (%v), want %q", tc.claims, reqs.String(), err, tc.want)
		}
	}
}

// TestMissingVolumeLaunchesNothing: as in Karpenter, a pod whose StorageClass does not exist
// gets no node (no node would take it), but says why; the other pods are provisioned for.
func TestMissingVolumeLaunchesNothing(t *testing.T) {
	f := newFixture(t, nodePool("default"))
	volumes(t)
	pending(t, withClaims("stranded", "classless"), withClaims("zonal", "zonal"))
	decision, err := f.provisioner.Provision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(decision.Created) != 1 || len(decision.Results.NewClaims[0].Pods) != 1 || decision.Results.NewClaims[0].Pods[0].Name != "zonal" {
		t.Fatalf("created %d claims, want one for the pod zonal alone", len(decision.Created))
	}
	zones, _ := decision.Results.NewClaims[0].Requirements.Get(corev1.LabelTopologyZone)
	if zones.Has("us-east-1b") || zones.Len() == 0 {
		t.Errorf("claim zones %v, want within the class's us-east-1a and -c", zones)
	}
	errs := decision.Results.PodErrors
	if len(errs) != 1 || errs[0].Pod.Name != "stranded" || errs[0].Err.Error() != `storageclass.storage.k8s.io "fast" not found` {
		t.Fatalf("pod errors %v, want the pod stranded's missing StorageClass", errs)
	}
}
