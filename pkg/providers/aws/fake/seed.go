package fake

import (
	"encoding/base64"
	"time"
)

// What SeedEKS creates: the names of an eksctl cluster with Karpenter (seed 004).
const (
	// SeedClusterName is the EKS cluster, also the value of the karpenter.sh/discovery tags.
	SeedClusterName = "cluster-with-karpenter"
	// SeedNodeRole is the IAM role of the nodes.
	SeedNodeRole = "eksctl-KarpenterNodeRole-cluster-with-karpenter"
	// SeedKubernetesVersion is the cluster's version, the one the SSM image parameters exist for.
	SeedKubernetesVersion = "1.35"
	// SeedClusterEndpoint is the cluster's API server URL.
	SeedClusterEndpoint = "https://0123456789ABCDEF.gr7.us-west-2.eks.amazonaws.com"
	// SeedInterruptionQueue is the SQS queue of interruption events.
	SeedInterruptionQueue = "karpenter-interruptions"
)

// SeedEKS creates what eksctl and AWS provide a cluster in us-west-2, relative to now:
// subnets tagged for discovery in three zones (and an untagged one), a tagged and an untagged
// security group, the node role, AL2023 (x86_64, arm64, and an old release), Bottlerocket,
// Ubuntu, Windows Server Core 2019, 2022 and 2025 and a deprecated custom image with the
// public SSM parameters of the EKS, Bottlerocket and Windows ones, the EKS cluster and the
// interruption queue.
func (a *AWS) SeedEKS(now time.Time) {
	disc := map[string]string{"karpenter.sh/discovery": SeedClusterName}
	for i, zone := range []string{"us-west-2a", "us-west-2b", "us-west-2c"} {
		a.AddSubnet(Subnet{ID: "subnet-0" + string(rune('a'+i)) + "000000000000000", Zone: zone, ZoneID: "usw2-az" + string(rune('1'+i)),
			VPCID: "vpc-1", CIDR: "10.0." + string(rune('0'+i)) + ".0/24", AvailableIPs: 250 - i, Tags: disc})
	}
	a.AddSubnet(Subnet{ID: "subnet-0f000000000000000", Zone: "us-west-2a", VPCID: "vpc-1", CIDR: "10.0.9.0/24", AvailableIPs: 4000})
	a.AddSecurityGroup(SecurityGroup{ID: "sg-0a00000000000000a", Name: "eksctl-nodes", VPCID: "vpc-1", Tags: disc})
	a.AddSecurityGroup(SecurityGroup{ID: "sg-0b00000000000000b", Name: "other", VPCID: "vpc-1"})
	a.AddRole(SeedNodeRole)
	days := func(n int) time.Time { return now.Add(-time.Duration(n) * 24 * time.Hour) }
	deprecated := now.Add(-time.Hour)
	for _, im := range []Image{
		{ID: "ami-0a2023a00d6400001", Name: "amazon-eks-node-al2023-x86_64-standard-1.35-v20261101", OwnerID: "602401143452", OwnerAlias: "amazon", Architecture: "x86_64", CreationDate: days(20)},
		{ID: "ami-0a2023a00a6400001", Name: "amazon-eks-node-al2023-arm64-standard-1.35-v20261101", OwnerID: "602401143452", OwnerAlias: "amazon", Architecture: "arm64", CreationDate: days(20)},
		{ID: "ami-0a2023a00d6400000", Name: "amazon-eks-node-al2023-x86_64-standard-1.35-v20240807", OwnerID: "602401143452", OwnerAlias: "amazon", Architecture: "x86_64", CreationDate: days(800)},
		// The accelerated variants: NVIDIA (x86_64 and arm64) and Neuron (x86_64).
		{ID: "ami-0a2023a0096400001", Name: "amazon-eks-node-al2023-x86_64-nvidia-1.35-v20261101", OwnerID: "602401143452", OwnerAlias: "amazon", Architecture: "x86_64", CreationDate: days(20)},
		{ID: "ami-0a2023a0096a00001", Name: "amazon-eks-node-al2023-arm64-nvidia-1.35-v20261101", OwnerID: "602401143452", OwnerAlias: "amazon", Architecture: "arm64", CreationDate: days(20)},
		{ID: "ami-0a2023a00e0400001", Name: "amazon-eks-node-al2023-x86_64-neuron-1.35-v20261101", OwnerID: "602401143452", OwnerAlias: "amazon", Architecture: "x86_64", CreationDate: days(20)},
		// A stranger's public image under an EKS image's name, newer than it.
		{ID: "ami-0ba0ba0ba0ba00000", Name: "amazon-eks-node-al2023-x86_64-standard-1.35-v20261101", OwnerID: "444455556666", Architecture: "x86_64", CreationDate: days(1)},
		{ID: "ami-0b0771e0c4e786000", Name: "bottlerocket-aws-k8s-1.35-x86_64-v1.50.0", OwnerID: "092701018921", Architecture: "x86_64", CreationDate: days(10)},
		{ID: "ami-0ab0124040d640000", Name: "ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-20250101", OwnerID: "099720109477", Architecture: "x86_64", CreationDate: days(300)},
		{ID: "ami-0de0de0de0de00000", Name: "old-custom", OwnerID: "111122223333", Architecture: "x86_64", CreationDate: days(900), DeprecationTime: &deprecated},
		// The EKS-optimized Windows Server Core images (x86_64 only).
		{ID: "ami-0a1d0a2019d640001", Name: "Windows_Server-2019-English-Core-EKS_Optimized-1.35-2026.11.12", OwnerID: "801119661308", OwnerAlias: "amazon", Architecture: "x86_64", CreationDate: days(15)},
		{ID: "ami-0a1d0a2022d640001", Name: "Windows_Server-2022-English-Core-EKS_Optimized-1.35-2026.11.12", OwnerID: "801119661308", OwnerAlias: "amazon", Architecture: "x86_64", CreationDate: days(15)},
		{ID: "ami-0a1d0a2025d640001", Name: "Windows_Server-2025-English-Core-EKS_Optimized-1.35-2026.11.12", OwnerID: "801119661308", OwnerAlias: "amazon", Architecture: "x86_64", CreationDate: days(15)},
	} {
		a.AddImage(im)
	}
	const eks = "/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/"
	a.PutParameter(eks+"x86_64/standard/recommended/image_id", "ami-0a2023a00d6400001")
	a.PutParameter(eks+"arm64/standard/recommended/image_id", "ami-0a2023a00a6400001")
	a.PutParameter(eks+"x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.35-v20240807/image_id", "ami-0a2023a00d6400000")
	a.PutParameter(eks+"x86_64/nvidia/recommended/image_id", "ami-0a2023a0096400001")
	a.PutParameter(eks+"arm64/nvidia/recommended/image_id", "ami-0a2023a0096a00001")
	a.PutParameter(eks+"x86_64/neuron/recommended/image_id", "ami-0a2023a00e0400001")
	a.PutParameter("/aws/service/bottlerocket/aws-k8s-1.35/x86_64/latest/image_id", "ami-0b0771e0c4e786000")
	for _, v := range []string{"2019", "2022", "2025"} {
		a.PutParameter("/aws/service/ami-windows-latest/Windows_Server-"+v+"-English-Core-EKS_Optimized-1.35/image_id", "ami-0a1d0a"+v+"d640001")
	}
	a.AddCluster(Cluster{Name: SeedClusterName, Endpoint: SeedClusterEndpoint,
		CAData:      base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")),
		ServiceCIDR: "10.100.0.0/16", Version: SeedKubernetesVersion})
	a.CreateQueue(SeedInterruptionQueue)
}
