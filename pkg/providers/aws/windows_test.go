package aws

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// windowsNodePool is the seed 004 NodePool for Windows nodes of the NodeClass: kubernetes.io/os
// windows instead of linux, as the AWS provider v1.15.2's Windows launch template tests ask.
func windowsNodePool(np *karpv1.NodePool, nodeClass string) *karpv1.NodePool {
	np = np.DeepCopy()
	np.Name = "windows-" + strings.ToLower(nodeClass)
	np.Spec.Template.Spec.NodeClassRef.Name = nodeClass
	for i, r := range np.Spec.Template.Spec.Requirements {
		if r.Key == corev1.LabelOSStable {
			np.Spec.Template.Spec.Requirements[i].Values = []string{string(corev1.Windows)}
		}
	}
	return np
}

// TestWindowsAliases: windows2019@latest, windows2022@latest and windows2025@latest resolve,
// launch and label Windows nodes as the AWS provider v1.15.2 does:
//   - the image comes from /aws/service/ami-windows-latest/Windows_Server-<year>-English-Core-
//     EKS_Optimized-<k8s>/image_id and requires kubernetes.io/os windows and the family's
//     node.kubernetes.io/windows-build (amifamily/windows.go, Windows.DescribeImageQuery);
//   - the NodeClass is Ready, not refused (controllers/nodeclass/validation.go);
//   - the instance types are the x86_64 ones, labelled os windows and the build, with 110 pods,
//     kube-reserved memory from those pods, a 50Gi C: and vpc.amazonaws.com/PrivateIPv4Address
//     (instancetype/types.go: computeRequirements, getOS, pods, NewInstanceType,
//     privateIPv4Address; amifamily/windows.go FeatureFlags and DefaultBlockDeviceMappings);
//   - a launch boots the image with a 50Gi encrypted gp3 /dev/sda1 and PowerShell user data
//     calling Start-EKSBootstrap.ps1 (bootstrap/windows.go, Windows.Script), and the claim,
//     launched and read back, carries the Windows labels (cloudprovider.go instanceToNodeClaim).
func TestWindowsAliases(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.KubeDNSIP = "10.100.0.10" })
	ncs, nps := readManifests(t, "seed-004-nodepool.yaml")
	for _, tc := range []struct {
		year, build, image string
	}{
		{"2019", "10.0.17763", "ami-0a1d0a2019d640001"},
		{"2022", "10.0.20348", "ami-0a1d0a2022d640001"},
		{"2025", "10.0.26100", "ami-0a1d0a2025d640001"},
	} {
		t.Run("windows"+tc.year, func(t *testing.T) {
			nc := ncs[0].DeepCopy()
			nc.Name = "windows" + tc.year
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "windows" + tc.year + "@latest"}}
			got := f.applyNodeClass(nc)
			for _, c := range []string{awsv1.ConditionTypeValidationSucceeded, awsv1.ConditionTypeReady} {
				if s, msg := condition(got, c); s != metav1.ConditionTrue {
					t.Fatalf("%s %s: %s", c, s, msg)
				}
			}
			wantReqs := fmt.Sprint([]corev1.NodeSelectorRequirement{
				{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
				{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"windows"}},
				{Key: corev1.LabelWindowsBuild, Operator: corev1.NodeSelectorOpIn, Values: []string{tc.build}},
			})
			if len(got.Status.AMIs) != 1 || got.Status.AMIs[0].ID != tc.image || fmt.Sprint(got.Status.AMIs[0].Requirements) != wantReqs {
				t.Fatalf("status.amis %+v, want %s requiring %s", got.Status.AMIs, tc.image, wantReqs)
			}

			np := windowsNodePool(nps[0], nc.Name)
			its, err := f.provider.GetInstanceTypes(f.ctx, np)
			if err != nil {
				t.Fatal(err)
			}
			var m5 *cloudprovider.InstanceType
			for _, it := range its {
				if it.Labels[corev1.LabelArchStable] != "amd64" || it.Labels[corev1.LabelOSStable] != "windows" || it.Labels[corev1.LabelWindowsBuild] != tc.build {
					t.Fatalf("%s labels %v, want amd64, windows, %s", it.Name, it.Labels, tc.build)
				}
				if it.Name == "m5.large" {
					m5 = it
				}
			}
			if m5 == nil {
				t.Fatal("no m5.large")
			}
			for name, want := range map[corev1.ResourceName]string{
				corev1.ResourcePods: "110", corev1.ResourceEphemeralStorage: "50Gi", cloudprovider.ResourcePrivateIPv4Address: "9",
			} {
				if q := m5.Capacity[name]; q.Cmp(resource.MustParse(want)) != 0 {
					t.Errorf("m5.large capacity %s = %s, want %s", name, q.String(), want)
				}
			}
			if q := m5.Overhead.KubeReserved[corev1.ResourceMemory]; q.Cmp(resource.MustParse(fmt.Sprintf("%dMi", 11*110+255))) != 0 {
				t.Errorf("m5.large kube-reserved memory %s, want (11 × 110 + 255)Mi", q.String())
			}

			claim := claimFor(np, "win-"+tc.year, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
				req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large"))
			launched, err := f.provider.Create(f.ctx, claim)
			if err != nil {
				t.Fatal(err)
			}
			if launched.Status.ImageID != tc.image || launched.Labels[corev1.LabelOSStable] != "windows" || launched.Labels[corev1.LabelWindowsBuild] != tc.build {
				t.Errorf("launched image %s, labels %v", launched.Status.ImageID, launched.Labels)
			}
			var lt *struct{ userData string }
			for _, l := range f.launchTemplates() {
				if l.ImageID != tc.image {
					continue
				}
				lt = &struct{ userData string }{l.UserData}
				if len(l.BlockDeviceMappings) != 1 || l.BlockDeviceMappings[0].DeviceName != "/dev/sda1" || l.BlockDeviceMappings[0].EBS == nil ||
					*l.BlockDeviceMappings[0].EBS.VolumeSize != 50 || l.BlockDeviceMappings[0].EBS.VolumeType != "gp3" || !*l.BlockDeviceMappings[0].EBS.Encrypted {
					t.Errorf("block devices %+v, want a 50Gi encrypted gp3 /dev/sda1", l.BlockDeviceMappings)
				}
			}
			if lt == nil {
				t.Fatalf("no launch template of %s", tc.image)
			}
			ca := base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"))
			want := "<powershell>\n[string]$EKSBootstrapScriptFile = \"$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1\"\n" +
				"& $EKSBootstrapScriptFile -EKSClusterName '" + testCluster + "' -APIServerEndpoint '" + testEndpoint + "' -Base64ClusterCA '" + ca + "'" +
				` -KubeletExtraArgs '--node-labels="karpenter.sh/do-not-sync-taints=true,karpenter.sh/nodepool=` + np.Name + `,team=web" --register-with-taints="dedicated=web:NoSchedule,karpenter.sh/unregistered:NoExecute" --max-pods=110'` +
				" -DNSClusterIP '10.100.0.10'\n</powershell>"
			if lt.userData != want {
				t.Errorf("user data\n got %q\nwant %q", lt.userData, want)
			}

			read, err := f.provider.Get(f.ctx, launched.Status.ProviderID)
			if err != nil {
				t.Fatal(err)
			}
			if read.Labels[corev1.LabelOSStable] != "windows" || read.Labels[corev1.LabelWindowsBuild] != tc.build {
				t.Errorf("Get: labels %v, want os windows and build %s", read.Labels, tc.build)
			}
		})
	}
}

// TestWindowsFamilyWithUserData: amiFamily Windows2022 with an image selected by ID takes the
// family's instance types and PowerShell bootstrap, the user's script running first inside the
// same <powershell> block, as the AWS provider v1.15.2's launchtemplate testdata
// windows_userdata_merged.golden (bootstrap/windows.go, Windows.Script); an image selected
// otherwise than by alias requires its architecture only (amifamily/ami.go,
// DescribeImageQueries: KnownRequirements for aliases only).
func TestWindowsFamilyWithUserData(t *testing.T) {
	f := newFixture(t)
	ncs, nps := readManifests(t, "seed-004-nodepool.yaml")
	nc := ncs[0]
	nc.Name = "windows-by-id"
	nc.Spec.AMIFamily = strp(awsv1.AMIFamilyWindows2022)
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-0a1d0a2022d640001"}}
	user := "Write-Host \"Running custom user data script\"\nWrite-Host \"Finished running custom user data script\"\n"
	nc.Spec.UserData = strp(user)
	nc.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: int32p(30), PodsPerCore: int32p(4)}
	got := f.applyNodeClass(nc)
	if s, msg := condition(got, awsv1.ConditionTypeReady); s != metav1.ConditionTrue {
		t.Fatalf("Ready %s: %s", s, msg)
	}
	if len(got.Status.AMIs) != 1 || len(got.Status.AMIs[0].Requirements) != 1 || got.Status.AMIs[0].Requirements[0].Key != corev1.LabelArchStable {
		t.Fatalf("status.amis %+v, want one image requiring its architecture", got.Status.AMIs)
	}
	np := windowsNodePool(nps[0], nc.Name)
	launched, err := f.provider.Create(f.ctx, claimFor(np, "win-ud", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large")))
	if err != nil {
		t.Fatal(err)
	}
	if launched.Labels[corev1.LabelWindowsBuild] != cloudprovider.Windows2022Build {
		t.Errorf("labels %v", launched.Labels)
	}
	// pods: min(maxPods 30, podsPerCore 4 × 2 vCPUs) = 8, podsPerCore applying on Windows.
	if q := launched.Status.Capacity[corev1.ResourcePods]; q.Value() != 8 {
		t.Errorf("pods %s, want 8", q.String())
	}
	ud := f.launchTemplates()[0].UserData
	if !strings.HasPrefix(ud, "<powershell>\n"+user+"\n[string]$EKSBootstrapScriptFile") || !strings.HasSuffix(ud, "\n</powershell>") ||
		!strings.Contains(ud, "--max-pods=30 --pods-per-core=4'") {
		t.Errorf("user data %q: want the user's script first, then the bootstrap with --max-pods=30 --pods-per-core=4", ud)
	}
}

// TestWindows2025NeedsKubernetes135: windows2025@latest on a cluster below Kubernetes 1.35
// resolves no image, with the AWS provider v1.15.2's message (amifamily/ami.go,
// DescribeImageQueries' WS2025UnsupportedVersionError); windows2022@latest resolves there.
func TestWindows2025NeedsKubernetes135(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.KubernetesVersion = func() (string, error) { return "1.34", nil } })
	f.aws.PutParameter("/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.34/image_id", "ami-0a1d0a2022d640001")
	ncs, _ := readManifests(t, "seed-004-nodepool.yaml")
	for alias, want := range map[string]string{
		"windows2025@latest": "Windows Server 2025 requires EKS version 1.35 or higher, current version: 1.34",
		"windows2022@latest": "",
	} {
		nc := ncs[0].DeepCopy()
		nc.Name = strings.ReplaceAll(alias, "@", "-")
		nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: alias}}
		got := f.applyNodeClass(nc)
		s, msg := condition(got, awsv1.ConditionTypeAMIsReady)
		switch {
		case want == "" && s != metav1.ConditionTrue:
			t.Errorf("%s: AMIsReady %s %q, want True", alias, s, msg)
		case want != "" && (s != metav1.ConditionFalse || !strings.Contains(msg, want)):
			t.Errorf("%s: AMIsReady %s %q, want False naming %q", alias, s, msg, want)
		}
	}
}
