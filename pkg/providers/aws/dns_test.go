package aws

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
)

// TestClusterDNSDefaultsToKubeDNS: without spec.kubelet.clusterDNS, nodes get the cluster DNS
// Service's address, as Karpenter injects it, on AL2023 (nodeadm's kubelet config) and
// Bottlerocket (settings.kubernetes.cluster-dns-ip) alike; a clusterDNS the EC2NodeClass sets
// wins.
func TestClusterDNSDefaultsToKubeDNS(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.KubeDNSIP = "10.100.0.10" })
	ncs, nps := readManifests(t, "seed-004-nodepool.yaml")
	for _, tc := range []struct {
		name   string
		mutate func(*awsv1.EC2NodeClass)
		want   string
	}{
		{"al2023", func(*awsv1.EC2NodeClass) {}, "- 10.100.0.10"},
		{"bottlerocket", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
		}, `cluster-dns-ip = "10.100.0.10"`},
		{"explicit", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.Kubelet = &awsv1.KubeletConfiguration{ClusterDNS: []string{"169.254.20.10"}}
		}, "- 169.254.20.10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := ncs[0].DeepCopy()
			nc.Name = "dns-" + tc.name
			tc.mutate(nc)
			f.applyNodeClass(nc)
			np := nps[0].DeepCopy()
			np.Spec.Template.Spec.NodeClassRef.Name = nc.Name
			before := len(f.launchTemplates())
			launched, err := f.provider.Create(f.ctx, claimFor(np, "dns-"+tc.name, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}))
			if err != nil {
				t.Fatal(err)
			}
			lts := f.launchTemplates()
			if len(lts) == before {
				t.Fatal("no new launch template")
			}
			for _, lt := range lts[before:] {
				if lt.ImageID == launched.Status.ImageID && !strings.Contains(lt.UserData, tc.want) {
					t.Errorf("user data lacks %q:\n%s", tc.want, lt.UserData)
				}
			}
		})
	}
}
