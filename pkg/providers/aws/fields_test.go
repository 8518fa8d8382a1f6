package aws

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/providers/aws/fake"
)

// TestNodeClassFieldsReachEC2: spec.context goes with the fleet request, and a block device's
// volumeInitializationRate with its launch template, as Karpenter sends them.
func TestNodeClassFieldsReachEC2(t *testing.T) {
	f := newFixture(t)
	ncs, nps := readManifests(t, "seed-004-nodepool.yaml")
	nc := ncs[0]
	nc.Spec.Context = strp("cr-0123456789abcdef0")
	size := resource.MustParse("100Gi")
	rate := int32(200)
	nc.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{{DeviceName: strp("/dev/xvda"), RootVolume: true,
		EBS: &awsv1.BlockDevice{VolumeSize: &size, SnapshotID: strp("snap-0123456789abcdef0"), VolumeInitializationRate: &rate}}}
	f.applyNodeClass(nc)
	if _, err := f.provider.Create(f.ctx, claimFor(nps[0], "fields", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})); err != nil {
		t.Fatal(err)
	}
	if fl := f.aws.Fleets(); len(fl) != 1 || fl[0].Context != "cr-0123456789abcdef0" {
		t.Errorf("fleets %+v, want the context cr-0123456789abcdef0", fl)
	}
	lt := f.launchTemplates()[0]
	if len(lt.BlockDeviceMappings) != 1 || lt.BlockDeviceMappings[0].EBS.VolumeInitializationRate == nil || *lt.BlockDeviceMappings[0].EBS.VolumeInitializationRate != 200 {
		t.Errorf("block devices %+v, want a volume initialization rate of 200", lt.BlockDeviceMappings)
	}
}

// TestEFAInterfacesAttached: a claim whose pods request vpc.amazonaws.com/efa launches with an
// EFA interface on each of its type's network cards, the first the primary, as Karpenter
// attaches them; a claim that requests none gets no EFA interface.
func TestEFAInterfacesAttached(t *testing.T) {
	f := newFixture(t)
	ncs, nps := readManifests(t, "seed-004-nodepool.yaml")
	f.applyNodeClass(ncs[0])
	np := nps[0]
	claim := claimFor(np, "efa", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), "vpc.amazonaws.com/efa": resource.MustParse("1")},
		req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5n.18xlarge"))
	if _, err := f.provider.Create(f.ctx, claim); err != nil {
		t.Fatal(err)
	}
	lt := f.launchTemplates()[0]
	if len(lt.NetworkInterfaces) != 1 || lt.NetworkInterfaces[0].InterfaceType != "efa" || *lt.NetworkInterfaces[0].DeviceIndex != 0 || *lt.NetworkInterfaces[0].NetworkCardIndex != 0 ||
		len(lt.NetworkInterfaces[0].SecurityGroupIDs) == 0 || len(lt.SecurityGroupIDs) != 0 {
		t.Errorf("network interfaces %+v, security groups %v: want one EFA interface on card 0 holding the groups", lt.NetworkInterfaces, lt.SecurityGroupIDs)
	}
	plain := claimFor(np, "no-efa", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5n.18xlarge"))
	if _, err := f.provider.Create(f.ctx, plain); err != nil {
		t.Fatal(err)
	}
	for _, lt := range f.launchTemplates()[1:] {
		if len(lt.NetworkInterfaces) != 0 {
			t.Errorf("a claim without EFA got interfaces %+v", lt.NetworkInterfaces)
		}
	}
	if n := len(f.launchTemplates()); n != 2 {
		t.Errorf("%d launch templates, want one with EFA and one without", n)
	}
	// Two network cards: an EFA interface on each, the second a secondary device.
	two := claimFor(np, "efa-two", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), "vpc.amazonaws.com/efa": resource.MustParse("2")},
		req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c6in.32xlarge"))
	if _, err := f.provider.Create(f.ctx, two); err != nil {
		t.Fatal(err)
	}
	lts := f.launchTemplates()
	nis := lts[len(lts)-1].NetworkInterfaces
	if len(nis) != 2 || *nis[1].NetworkCardIndex != 1 || *nis[1].DeviceIndex != 1 || nis[1].InterfaceType != "efa" {
		t.Errorf("network interfaces %+v, want EFA on cards 0 and 1", nis)
	}
}

// int32p returns a pointer to v.
func int32p(v int32) *int32 { return &v }

// TestIPPrefixCountAndConnectionTracking: in an IPv4 cluster, ipPrefixCount gives the primary
// interface IPv4 prefixes and connectionTracking its timeouts, the security groups moving onto
// the interface, as Karpenter's launch template has them; connection tracking limits the
// instance types to Nitro ones.
func TestIPPrefixCountAndConnectionTracking(t *testing.T) {
	f := newFixture(t)
	ncs, nps := readManifests(t, "seed-004-nodepool.yaml")
	nc := ncs[0]
	nc.Spec.IPPrefixCount = int32p(3)
	nc.Spec.ConnectionTracking = &awsv1.ConnectionTracking{TCPEstablishedTimeout: int32p(3600), UDPTimeout: int32p(45)}
	f.applyNodeClass(nc)
	its, err := f.provider.GetInstanceTypes(f.ctx, nps[0])
	if err != nil || len(its) == 0 {
		t.Fatalf("instance types: %d, %v", len(its), err)
	}
	for _, it := range its {
		if e, _ := catalog.Lookup(it.Name); e.Hypervisor != "nitro" {
			t.Errorf("%s (hypervisor %q) offered with connection tracking, which needs Nitro", it.Name, e.Hypervisor)
		}
	}
	if _, err := f.provider.Create(f.ctx, claimFor(nps[0], "prefixes", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})); err != nil {
		t.Fatal(err)
	}
	lt := f.launchTemplates()[0]
	if len(lt.NetworkInterfaces) != 1 || len(lt.SecurityGroupIDs) != 0 {
		t.Fatalf("network interfaces %+v, instance security groups %v: want the primary interface holding the groups", lt.NetworkInterfaces, lt.SecurityGroupIDs)
	}
	ni := lt.NetworkInterfaces[0]
	if aws.ToInt32(ni.DeviceIndex) != 0 || aws.ToInt32(ni.IPv4PrefixCount) != 3 || ni.IPv6PrefixCount != nil || ni.PrimaryIPv6 != nil || ni.IPv6AddressCount != nil ||
		!slices.Equal(ni.SecurityGroupIDs, []string{"sg-0a00000000000000a"}) {
		t.Errorf("primary interface %+v, want 3 IPv4 prefixes and the security group", ni)
	}
	if ct := ni.ConnectionTracking; ct == nil || aws.ToInt32(ct.TCPEstablishedTimeout) != 3600 || aws.ToInt32(ct.UDPTimeout) != 45 || ct.UDPStreamTimeout != nil {
		t.Errorf("connection tracking %+v, want tcp 3600s and udp 45s", ct)
	}
}

// TestIPv6ClusterPrimaryInterface: in an IPv6 cluster, known by the kube-dns Service's address
// as Karpenter knows it, or else by DescribeCluster's ipFamily, the primary interface gets a
// primary IPv6 address and ipPrefixCount IPv6 prefixes instead of IPv4 ones.
func TestIPv6ClusterPrimaryInterface(t *testing.T) {
	for _, tc := range []struct {
		name     string
		options  func(*Options)
		cluster  *fake.Cluster
		prefixes *int32
	}{
		{"kube-dns address", func(o *Options) { o.KubeDNSIP = "fd00:10:100::a" }, nil, int32p(2)},
		{"describe cluster", func(*Options) {}, &fake.Cluster{Name: testCluster, Endpoint: testEndpoint, IPFamily: "ipv6", ServiceIPv6CIDR: "fd00:10:100::/108", Version: testVersion}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.options)
			if tc.cluster != nil {
				f.aws.AddCluster(*tc.cluster)
			}
			ncs, nps := readManifests(t, "seed-004-nodepool.yaml")
			nc := ncs[0]
			nc.Spec.IPPrefixCount = tc.prefixes
			f.applyNodeClass(nc)
			if _, err := f.provider.Create(f.ctx, claimFor(nps[0], "ipv6", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})); err != nil {
				t.Fatal(err)
			}
			lt := f.launchTemplates()[0]
			if len(lt.NetworkInterfaces) != 1 || len(lt.SecurityGroupIDs) != 0 {
				t.Fatalf("network interfaces %+v, instance security groups %v: want the primary interface", lt.NetworkInterfaces, lt.SecurityGroupIDs)
			}
			ni := lt.NetworkInterfaces[0]
			if !aws.ToBool(ni.PrimaryIPv6) || aws.ToInt32(ni.IPv6AddressCount) != 1 || ni.IPv4PrefixCount != nil || !reflect.DeepEqual(ni.IPv6PrefixCount, tc.prefixes) ||
				len(ni.SecurityGroupIDs) != 1 {
				t.Errorf("primary interface %+v, want a primary IPv6 address and IPv6 prefixes %v", ni, tc.prefixes)
			}
		})
	}
}

// TestNetworkInterfaces: a NodeClass's networkInterfaces are the launch template's interfaces,
// as Karpenter makes them: each holds the security groups; the efa-only one gets no prefixes or
// connection tracking; pods requesting vpc.amazonaws.com/efa get them rather than an EFA
// interface per card. The instance types are those with the interfaces' network cards and
// enough EFA interfaces, and their EFA capacity is the efa-only interfaces; an efa-only
// interface on the first card is not left to the VPC CNI, so it lowers the pods per node.
func TestNetworkInterfaces(t *testing.T) {
	f := newFixture(t)
	ncs, nps := readManifests(t, "seed-004-nodepool.yaml")
	nc := ncs[0]
	nc.Spec.IPPrefixCount = int32p(1)
	nc.Spec.ConnectionTracking = &awsv1.ConnectionTracking{UDPStreamTimeout: int32p(90)}
	nc.Spec.NetworkInterfaces = []*awsv1.NetworkInterface{
		{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeInterface},
		{NetworkCardIndex: 1, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeEFAOnly},
	}
	f.applyNodeClass(nc)
	np := nps[0]
	its, err := f.provider.GetInstanceTypes(f.ctx, np)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*cloudprovider.InstanceType{}
	for _, it := range its {
		byName[it.Name] = it
		if e, _ := catalog.Lookup(it.Name); e.EFAInterfaces < 2 {
			t.Errorf("%s offered with an interface on network card 1, which it lacks", it.Name)
		}
		if efa := it.Capacity[cloudprovider.ResourceEFA]; efa.Value() != 1 {
			t.Errorf("%s EFA capacity %s, want the one efa-only interface", it.Name, efa.String())
		}
	}
	if byName["c6in.32xlarge"] == nil || byName["c5n.18xlarge"] != nil || byName["m5.large"] != nil {
		t.Fatalf("instance types %d: want c6in.32xlarge (two network cards), not c5n.18xlarge (one) nor m5.large (no EFA)", len(its))
	}
	claim := claimFor(np, "interfaces", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), cloudprovider.ResourceEFA: resource.MustParse("1")},
		req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c6in.32xlarge"))
	if _, err := f.provider.Create(f.ctx, claim); err != nil {
		t.Fatal(err)
	}
	lt := f.launchTemplates()[0]
	if len(lt.NetworkInterfaces) != 2 || len(lt.SecurityGroupIDs) != 0 {
		t.Fatalf("network interfaces %+v, instance security groups %v: want the NodeClass's two", lt.NetworkInterfaces, lt.SecurityGroupIDs)
	}
	primary, efaOnly := lt.NetworkInterfaces[0], lt.NetworkInterfaces[1]
	if primary.InterfaceType != "interface" || aws.ToInt32(primary.NetworkCardIndex) != 0 || aws.ToInt32(primary.DeviceIndex) != 0 || aws.ToInt32(primary.IPv4PrefixCount) != 1 ||
		primary.ConnectionTracking == nil || aws.ToInt32(primary.ConnectionTracking.UDPStreamTimeout) != 90 || len(primary.SecurityGroupIDs) != 1 {
		t.Errorf("primary interface %+v", primary)
	}
	if efaOnly.InterfaceType != "efa-only" || aws.ToInt32(efaOnly.NetworkCardIndex) != 1 || aws.ToInt32(efaOnly.DeviceIndex) != 0 || efaOnly.IPv4PrefixCount != nil ||
		efaOnly.ConnectionTracking != nil || efaOnly.AssociatePublicIP != nil || len(efaOnly.SecurityGroupIDs) != 1 {
		t.Errorf("efa-only interface %+v", efaOnly)
	}

	// An efa-only interface on the first card takes one of its interfaces from pods.
	plain, firstCard := ncs[0].DeepCopy(), ncs[0].DeepCopy()
	plain.Name, firstCard.Name = "plain", "efa-first-card"
	plain.ResourceVersion, firstCard.ResourceVersion = "", ""
	plain.Spec.NetworkInterfaces, plain.Spec.ConnectionTracking, plain.Spec.IPPrefixCount = nil, nil, nil
	firstCard.Spec.NetworkInterfaces = []*awsv1.NetworkInterface{
		{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeInterface},
		{NetworkCardIndex: 0, DeviceIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly},
	}
	pods := func(nc *awsv1.EC2NodeClass) int64 {
		t.Helper()
		f.applyNodeClass(nc)
		pool := np.DeepCopy()
		pool.Spec.Template.Spec.NodeClassRef.Name = nc.Name
		its, err := f.provider.GetInstanceTypes(f.ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range its {
			if it.Name == "c6in.32xlarge" {
				return it.Capacity.Pods().Value()
			}
		}
		t.Fatalf("ec2nodeclass %s: no c6in.32xlarge", nc.Name)
		return 0
	}
	e, _ := catalog.Lookup("c6in.32xlarge")
	if without, with := pods(plain), pods(firstCard); with != without-int64(e.IPv4PerENI-1) {
		t.Errorf("c6in.32xlarge pods %d with an efa-only interface on card 0, %d without: want one interface's addresses fewer", with, without)
	}
}

// TestNestedVirtualization: cpuOptions.nestedVirtualization enabled limits the instance types to
// those DescribeInstanceTypes reports supporting it and reaches the launch template; disabled
// reaches it too and limits nothing.
func TestNestedVirtualization(t *testing.T) {
	f := newFixture(t)
	supporting := []string{"c8i.large", "m8i.large", "r8i.large"}
	for _, name := range supporting {
		f.aws.SetProcessorFeatures(name, "nested-virtualization")
	}
	ncs, nps := readManifests(t, "seed-004-nodepool.yaml")
	enabled, disabled := ncs[0], ncs[0].DeepCopy()
	enabled.Spec.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: strp("enabled")}
	f.applyNodeClass(enabled)
	its, err := f.provider.GetInstanceTypes(f.ctx, nps[0])
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range its {
		names = append(names, it.Name)
	}
	if !slices.Equal(names, supporting) {
		t.Errorf("instance types %v, want those supporting nested virtualization %v", names, supporting)
	}
	if _, err := f.provider.Create(f.ctx, claimFor(nps[0], "nested", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})); err != nil {
		t.Fatal(err)
	}
	if lt := f.launchTemplates()[0]; lt.NestedVirtualization != "enabled" {
		t.Errorf("launch template nested virtualization %q, want enabled", lt.NestedVirtualization)
	}
	if inst := f.aws.Instances()[0]; !slices.Contains(supporting, inst.Type) {
		t.Errorf("launched %s", inst.Type)
	}

	disabled.Name = "nested-disabled"
	disabled.Spec.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: strp("disabled")}
	f.applyNodeClass(disabled)
	pool := nps[0].DeepCopy()
	pool.Name = "nested-disabled"
	pool.Spec.Template.Spec.NodeClassRef.Name = disabled.Name
	if its, err := f.provider.GetInstanceTypes(f.ctx, pool); err != nil || len(its) <= len(supporting) {
		t.Errorf("%d instance types with nested virtualization disabled (%v), want every type", len(its), err)
	}
	if _, err := f.provider.Create(f.ctx, claimFor(pool, "not-nested", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})); err != nil {
		t.Fatal(err)
	}
	lts := f.launchTemplates()
	if lt := lts[len(lts)-1]; lt.NestedVirtualization != "disabled" {
		t.Errorf("launch template nested virtualization %q, want disabled", lt.NestedVirtualization)
	}
}

// kubeletOf is a kubelet configuration written as JSON, decoded as the API server's objects are.
func kubeletOf(t *testing.T, doc string) *awsv1.KubeletConfiguration {
	t.Helper()
	k := &awsv1.KubeletConfiguration{}
	if err := json.Unmarshal([]byte(doc), k); err != nil {
		t.Fatal(err)
	}
	return k
}

// TestKubeletFieldsKarpenterDoesNotRead: spec.kubelet takes any field of the upstream kubelet
// configuration, as Karpenter v1.15 does. An AL2023 NodeClass is Ready and its nodes' NodeConfig
// carries the fields; one whose configuration Karpenter's controller refuses says why in
// ValidationSucceeded (not Ready), as do AL2 and Bottlerocket NodeClasses with fields their
// bootstrap would drop.
func TestKubeletFieldsKarpenterDoesNotRead(t *testing.T) {
	f := newFixture(t)
	ncs, nps := readManifests(t, "seed-004-nodepool.yaml")
	nc := ncs[0]
	nc.Spec.Kubelet = kubeletOf(t, `{"maxPods": 30, "containerLogMaxSize": "50Mi", "shutdownGracePeriod": "45s"}`)
	got := f.applyNodeClass(nc)
	if s, msg := condition(got, awsv1.ConditionTypeReady); s != metav1.ConditionTrue {
		t.Fatalf("Ready %s: %s", s, msg)
	}
	if want := []string{"containerLogMaxSize", "shutdownGracePeriod"}; !reflect.DeepEqual(got.Spec.Kubelet.Unmanaged(), want) {
		t.Errorf("the API server kept %v, want %v", got.Spec.Kubelet.Unmanaged(), want)
	}
	if _, err := f.provider.Create(f.ctx, claimFor(nps[0], "kubelet", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})); err != nil {
		t.Fatal(err)
	}
	ud := f.launchTemplates()[0].UserData
	for _, want := range []string{"containerLogMaxSize: 50Mi", "shutdownGracePeriod: 45s", "maxPods: 30"} {
		if !strings.Contains(ud, want) {
			t.Errorf("user data lacks %q:\n%s", want, ud)
		}
	}

	for _, tc := range []struct {
		name, family, kubelet, reason, message string
	}{
		{"kubelet-invalid", "", `{"evictionHard": {"memory.free": "1Gi"}}`, cloudprovider.ReasonInvalidKubeletConfiguration, `spec.kubelet.evictionHard: "memory.free" isn't a valid eviction signal`},
		{"kubelet-unknown", "", `{"containerLogMaxSise": "50Mi"}`, cloudprovider.ReasonInvalidKubeletConfiguration, "spec.kubelet.containerLogMaxSise: unknown field"},
		{"kubelet-taints", "", `{"registerWithTaints": []}`, cloudprovider.ReasonInvalidKubeletConfiguration, "spec.kubelet.registerWithTaints: can't be set"},
		{"kubelet-expression", "", `{"maxPods": "pods * 2"}`, cloudprovider.ReasonKubeletExpressionsDisabled, "but the NodeClassCEL feature gate is disabled"},
		{"kubelet-al2", "al2@latest", `{"containerLogMaxSize": "50Mi"}`, cloudprovider.ReasonUnsupportedKubeletConfiguration, "spec.kubelet: has fields not applied by the AL2 AMI family that would be silently dropped: containerLogMaxSize"},
		{"kubelet-al2-dns", "al2@latest", `{"clusterDNS": ["10.0.0.10", "10.0.0.11"]}`, cloudprovider.ReasonUnsupportedKubeletConfiguration, "spec.kubelet.clusterDNS: the AL2 AMI family doesn't accept multiple entries"},
		{"kubelet-bottlerocket", "bottlerocket@latest", `{"podsPerCore": 4}`, cloudprovider.ReasonUnsupportedKubeletConfiguration, "not applied by the Bottlerocket AMI family that would be silently dropped: podsPerCore"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := ncs[0].DeepCopy()
			nc.ResourceVersion, nc.Name = "", tc.name
			if tc.family != "" {
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: tc.family}}
			}
			nc.Spec.Kubelet = kubeletOf(t, tc.kubelet)
			got := f.applyNodeClass(nc)
			c := meta.FindStatusCondition(got.Status.Conditions, awsv1.ConditionTypeValidationSucceeded)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tc.reason || !strings.Contains(c.Message, tc.message) {
				t.Errorf("ValidationSucceeded %+v, want False %s saying %q", c, tc.reason, tc.message)
			}
			if s, _ := condition(got, awsv1.ConditionTypeReady); s != metav1.ConditionFalse {
				t.Errorf("Ready %s", s)
			}
		})
	}
}

// TestNitroEnclaves: enclaveOptions enabled limits the instance types to those
// DescribeInstanceTypes reports supporting Nitro Enclaves and reaches the launch template, as
// Karpenter v1.15.2's launch template does; disabled limits nothing and enables nothing.
func TestNitroEnclaves(t *testing.T) {
	f := newFixture(t)
	supporting := []string{"c6i.xlarge", "m6i.xlarge"}
	f.aws.SetNitroEnclavesSupported(supporting...)
	ncs, nps := readManifests(t, "seed-004-nodepool.yaml")
	enabled, disabled := ncs[0], ncs[0].DeepCopy()
	enabled.Spec.EnclaveOptions = &awsv1.EnclaveOptions{Enabled: true}
	f.applyNodeClass(enabled)
	its, err := f.provider.GetInstanceTypes(f.ctx, nps[0])
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range its {
		names = append(names, it.Name)
	}
	if !slices.Equal(names, supporting) {
		t.Errorf("instance types %v, want those supporting Nitro Enclaves %v", names, supporting)
	}
	if _, err := f.provider.Create(f.ctx, claimFor(nps[0], "enclaves", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})); err != nil {
		t.Fatal(err)
	}
	if lt := f.launchTemplates()[0]; lt.NitroEnclaves == nil || !*lt.NitroEnclaves {
		t.Errorf("launch template enclave options %v, want enabled", lt.NitroEnclaves)
	}
	if inst := f.aws.Instances()[0]; !slices.Contains(supporting, inst.Type) {
		t.Errorf("launched %s", inst.Type)
	}

	disabled.Name = "enclaves-disabled"
	disabled.Spec.EnclaveOptions = &awsv1.EnclaveOptions{Enabled: false}
	f.applyNodeClass(disabled)
	pool := nps[0].DeepCopy()
	pool.Name = "enclaves-disabled"
	pool.Spec.Template.Spec.NodeClassRef.Name = disabled.Name
	if its, err := f.provider.GetInstanceTypes(f.ctx, pool); err != nil || len(its) <= len(supporting) {
		t.Errorf("%d instance types with enclaves disabled (%v), want every type", len(its), err)
	}
	if _, err := f.provider.Create(f.ctx, claimFor(pool, "no-enclaves", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})); err != nil {
		t.Fatal(err)
	}
	lts := f.launchTemplates()
	if lt := lts[len(lts)-1]; lt.NitroEnclaves != nil {
		t.Errorf("launch template enclave options %v, want unset (EC2's default, off)", *lt.NitroEnclaves)
	}
}

// TestInstanceTenancy: karpenter.k8s.aws/instance-tenancy is a label every instance type may
// take either value of, as in Karpenter v1.15.2: a claim that allows the default tenancy
// launches on shared hardware (no placement in the launch template), one that requires
// dedicated launches with the template's placement tenancy dedicated; the claim and the
// instance read back carry the tenancy label.
func TestInstanceTenancy(t *testing.T) {
	f := newFixture(t)
	_, np := f.seed004()
	cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	shared, err := f.provider.Create(f.ctx, claimFor(np, "shared", cpu))
	if err != nil {
		t.Fatal(err)
	}
	dedicated, err := f.provider.Create(f.ctx, claimFor(np, "dedicated", cpu, req(awsv1.LabelInstanceTenancy, corev1.NodeSelectorOpIn, awsv1.TenancyDedicated)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.provider.Create(f.ctx, claimFor(np, "host", cpu, req(awsv1.LabelInstanceTenancy, corev1.NodeSelectorOpIn, "host"))); err == nil {
		t.Errorf("a claim allowing neither tenancy launched")
	}
	for _, tc := range []struct {
		claim *karpv1.NodeClaim
		want  string
	}{{shared, awsv1.TenancyDefault}, {dedicated, awsv1.TenancyDedicated}} {
		if got := tc.claim.Labels[awsv1.LabelInstanceTenancy]; got != tc.want {
			t.Errorf("claim %s tenancy label %q, want %q", tc.claim.Name, got, tc.want)
		}
		back, err := f.provider.Get(f.ctx, tc.claim.Status.ProviderID)
		if err != nil {
			t.Fatal(err)
		}
		if got := back.Labels[awsv1.LabelInstanceTenancy]; got != tc.want {
			t.Errorf("instance of %s read back with tenancy %q, want %q", tc.claim.Name, got, tc.want)
		}
		var inst fake.Instance
		for _, i := range f.aws.Instances() {
			if strings.HasSuffix(tc.claim.Status.ProviderID, i.ID) {
				inst = i
			}
		}
		if inst.Tenancy != tc.want {
			t.Errorf("EC2 instance of %s has tenancy %q, want %q", tc.claim.Name, inst.Tenancy, tc.want)
		}
		for _, lt := range f.launchTemplates() {
			if lt.Name == inst.LaunchTemplateName && lt.Tenancy != map[string]string{awsv1.TenancyDefault: "", awsv1.TenancyDedicated: "dedicated"}[tc.want] {
				t.Errorf("launch template of %s has placement tenancy %q", tc.claim.Name, lt.Tenancy)
			}
		}
	}
}
