package aws

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
)

func TestParseInterruptionMessage(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       InterruptionMessage
	}{
		{"spot", `{"version":"0","source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","resources":["arn:aws:ec2:us-west-2:1:instance/i-0abc"],"detail":{"instance-id":"i-0abc","instance-action":"terminate"}}`,
			InterruptionMessage{Kind: MessageSpotInterruption, InstanceIDs: []string{"i-0abc"}}},
		{"rebalance", `{"source":"aws.ec2","detail-type":"EC2 Instance Rebalance Recommendation","detail":{"instance-id":"i-1"}}`,
			InterruptionMessage{Kind: MessageRebalanceRecommendation, InstanceIDs: []string{"i-1"}}},
		{"stopping", `{"source":"aws.ec2","detail-type":"EC2 Instance State-change Notification","detail":{"instance-id":"i-2","state":"stopping"}}`,
			InterruptionMessage{Kind: MessageStateChange, InstanceIDs: []string{"i-2"}, State: "stopping"}},
		{"running is no news", `{"source":"aws.ec2","detail-type":"EC2 Instance State-change Notification","detail":{"instance-id":"i-2","state":"running"}}`,
			InterruptionMessage{Kind: MessageUnknown}},
		{"scheduled change", `{"source":"aws.health","detail-type":"AWS Health Event","detail":{"service":"EC2","eventTypeCategory":"scheduledChange","affectedEntities":[{"entityValue":"i-3"},{"entityValue":"i-4"}]}}`,
			InterruptionMessage{Kind: MessageScheduledChange, InstanceIDs: []string{"i-3", "i-4"}}},
		{"not json", `hello`, InterruptionMessage{Kind: MessageUnknown}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ParseInterruptionMessage(tc.body)
			if got.Kind != tc.want.Kind || got.State != tc.want.State || len(got.InstanceIDs) != len(tc.want.InstanceIDs) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got.InstanceIDs {
				if got.InstanceIDs[i] != tc.want.InstanceIDs[i] {
					t.Fatalf("got %+v, want %+v", got, tc.want)
				}
			}
		})
	}
}

func TestAliasParameters(t *testing.T) {
	const eks = "/aws/service/eks/optimized-ami/1.35/"
	for _, tc := range []struct {
		alias, family string
		want          []aliasParameter
	}{
		{"al2023@latest", "AL2023", []aliasParameter{
			{eks + "amazon-linux-2023/x86_64/standard/recommended/image_id", []variant{variantStandard}, nil},
			{eks + "amazon-linux-2023/arm64/standard/recommended/image_id", []variant{variantStandard}, nil},
			{eks + "amazon-linux-2023/x86_64/nvidia/recommended/image_id", []variant{variantNvidia}, nil},
			{eks + "amazon-linux-2023/arm64/nvidia/recommended/image_id", []variant{variantNvidia}, nil},
			{eks + "amazon-linux-2023/x86_64/neuron/recommended/image_id", []variant{variantNeuron}, nil},
		}},
		{"al2023@v20240807", "AL2023", []aliasParameter{
			{eks + "amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.35-v20240807/image_id", []variant{variantStandard}, nil},
			{eks + "amazon-linux-2023/arm64/standard/amazon-eks-node-al2023-arm64-standard-1.35-v20240807/image_id", []variant{variantStandard}, nil},
			{eks + "amazon-linux-2023/x86_64/nvidia/amazon-eks-node-al2023-x86_64-nvidia-1.35-v20240807/image_id", []variant{variantNvidia}, nil},
			{eks + "amazon-linux-2023/arm64/nvidia/amazon-eks-node-al2023-arm64-nvidia-1.35-v20240807/image_id", []variant{variantNvidia}, nil},
			{eks + "amazon-linux-2023/x86_64/neuron/amazon-eks-node-al2023-x86_64-neuron-1.35-v20240807/image_id", []variant{variantNeuron}, nil},
		}},
		{"bottlerocket@v1.20.0", "Bottlerocket", []aliasParameter{
			{"/aws/service/bottlerocket/aws-k8s-1.35/x86_64/1.20.0/image_id", []variant{variantStandard, variantNeuron}, nil},
			{"/aws/service/bottlerocket/aws-k8s-1.35/arm64/1.20.0/image_id", []variant{variantStandard}, nil},
			{"/aws/service/bottlerocket/aws-k8s-1.35-nvidia/x86_64/1.20.0/image_id", []variant{variantNvidia}, nil},
			{"/aws/service/bottlerocket/aws-k8s-1.35-nvidia/arm64/1.20.0/image_id", []variant{variantNvidia}, nil},
		}},
		{"al2@latest", "AL2", []aliasParameter{
			{eks + "amazon-linux-2/recommended/image_id", []variant{variantStandard}, nil},
			{eks + "amazon-linux-2-arm64/recommended/image_id", []variant{variantStandard}, nil},
			{eks + "amazon-linux-2-gpu/recommended/image_id", []variant{variantNvidia, variantNeuron}, nil},
		}},
		{"al2@v20250101", "AL2", []aliasParameter{
			{eks + "amazon-linux-2/amazon-eks-node-1.35-v20250101/image_id", []variant{variantStandard}, nil},
			{eks + "amazon-linux-2-arm64/amazon-eks-arm64-node-1.35-v20250101/image_id", []variant{variantStandard}, nil},
			{eks + "amazon-linux-2-gpu/amazon-eks-gpu-node-1.35-v20250101/image_id", []variant{variantNvidia, variantNeuron}, nil},
		}},
		// As Windows.DescribeImageQuery (amifamily/windows.go): one parameter, no variants, the
		// os and windows-build requirements.
		{"windows2019@latest", "Windows2019", []aliasParameter{windowsAlias("2019", "10.0.17763")}},
		{"windows2022@latest", "Windows2022", []aliasParameter{windowsAlias("2022", "10.0.20348")}},
		{"windows2025@latest", "Windows2025", []aliasParameter{windowsAlias("2025", "10.0.26100")}},
	} {
		family, params, err := aliasParameters(tc.alias, "1.35")
		if err != nil || family != tc.family || fmt.Sprint(params) != fmt.Sprint(tc.want) {
			t.Errorf("%s: got %s %v %v\nwant %v", tc.alias, family, params, err, tc.want)
		}
	}
	for _, bad := range []string{"al2023", "windows2022@v20240101", "ubuntu@latest"} {
		if _, _, err := aliasParameters(bad, "1.35"); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	// As DescribeImageQueries' WS2025UnsupportedVersionError (amifamily/ami.go).
	if _, _, err := aliasParameters("windows2025@latest", "1.34"); err == nil || !strings.Contains(err.Error(), "Windows Server 2025 requires EKS version 1.35 or higher, current version: 1.34") {
		t.Errorf("windows2025@latest on 1.34: %v", err)
	}
	if _, _, err := aliasParameters("windows2022@latest", "1.34"); err != nil {
		t.Errorf("windows2022@latest on 1.34: %v", err)
	}
}

// windowsAlias is the SSM parameter of a Windows Server Core EKS image for Kubernetes 1.35.
func windowsAlias(version, build string) aliasParameter {
	return aliasParameter{
		name: "/aws/service/ami-windows-latest/Windows_Server-" + version + "-English-Core-EKS_Optimized-1.35/image_id",
		requirements: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"windows"}},
			{Key: corev1.LabelWindowsBuild, Operator: corev1.NodeSelectorOpIn, Values: []string{build}},
		},
	}
}

func TestInstanceIDOf(t *testing.T) {
	if id, err := instanceIDOf("aws:///us-west-2a/i-0123456789abcdef0"); err != nil || id != "i-0123456789abcdef0" {
		t.Errorf("got %q %v", id, err)
	}
	for _, bad := range []string{"", "sim:///us-west-2a/i-1", "aws:///us-west-2a/", "aws:///i"} {
		if _, err := instanceIDOf(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestBootstrapLabels(t *testing.T) {
	got := bootstrapLabels(map[string]string{
		"team":                             "a",
		"karpenter.sh/nodepool":            "x",
		"node.kubernetes.io/instance-type": "m5.large",
		"kubernetes.io/arch":               "amd64",
		"example.kubernetes.io/x":          "no",
		"node-role.kubernetes.io/worker":   "",
		"karpenter.sh/capacity-type":       "spot",
		"company.com/tier":                 "gold",
	}, "general")
	want := map[string]string{"team": "a", "karpenter.sh/nodepool": "general", "company.com/tier": "gold"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

// TestEntryOfRoundTrip rebuilds catalog entries from an API description of the same facts.
func TestEntryOfRoundTrip(t *testing.T) {
	e, ok := catalog.Lookup("m5.large")
	if !ok {
		t.Fatal("m5.large not in the catalog")
	}
	info := ec2types.InstanceTypeInfo{
		InstanceType:  ec2types.InstanceType("m5.large"),
		VCpuInfo:      &ec2types.VCpuInfo{DefaultVCpus: aws.Int32(2)},
		MemoryInfo:    &ec2types.MemoryInfo{SizeInMiB: aws.Int64(8192)},
		ProcessorInfo: &ec2types.ProcessorInfo{SupportedArchitectures: []ec2types.ArchitectureType{"x86_64"}},
		NetworkInfo:   &ec2types.NetworkInfo{MaximumNetworkInterfaces: aws.Int32(3), Ipv4AddressesPerInterface: aws.Int32(10)},
	}
	got, ok := entryOf(info)
	if !ok || got.VCPU != e.VCPU || got.MemoryMiB != e.MemoryMiB || got.Arch != "amd64" || got.MaxPods != 29 || got.Family != "m5" {
		t.Fatalf("got %+v", got)
	}
	// A type the catalog does not know gets its name parts derived.
	info.InstanceType = "zz9-flex.4xlarge"
	got, ok = entryOf(info)
	if !ok || got.Family != "zz9-flex" || got.Category != "zz" || got.Generation != 9 || got.Size != "4xlarge" || !got.Flex {
		t.Fatalf("got %+v", got)
	}
}
