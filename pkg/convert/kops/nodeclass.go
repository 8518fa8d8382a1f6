package kops

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	"github.com/openkarpenter/karpenter/pkg/convert"
)

// Root volume defaults of kOps.
const (
	defaultNodeVolumeSize      = 128 // GB, role Node
	defaultVolumeType          = "gp3"
	minimumIoIOPS              = 100 // io1 and io2
	minimumGp3IOPS             = 3000
	minimumGp3Throughput       = 125
	defaultRootDeviceName      = "/dev/xvda"
	ubuntuRootDeviceName       = "/dev/sda1"
	subnetTypePublic           = "Public"
	subnetTypeUtility          = "Utility"
	subnetTypePrivate          = "Private"
	subnetTypeDualStack        = "DualStack"
	nodeupScriptStatePathShape = "%s/igconfig/node/%s/nodeupscript.sh"
)

// ec2NodeClass builds the EC2NodeClass kOps 1.36 generates for a group, tracing in doc which
// input field each part comes from.
func (g *generator) ec2NodeClass(ig *InstanceGroup, doc *convert.Document) (*awsv1.EC2NodeClass, error) {
	name := ig.Metadata.Name
	cluster := g.cluster.Metadata.Name
	src := g.sources[ig]

	term, err := amiSelectorTerm(ig.Spec.Image)
	if err != nil {
		return nil, at("spec.image", fmt.Errorf("building amiSelectorTerms for %q: %w", name, err))
	}
	doc.TraceParsed("spec.amiSelectorTerms", src, "spec.image")
	profile, err := instanceProfile(g.cluster, ig)
	if err != nil {
		return nil, at("spec.iam.profile", fmt.Errorf("building instance profile for %q: %w", name, err))
	}
	doc.TraceParsed("spec.instanceProfile", src, "spec.iam.profile")
	tags, warnings := nodeClassTags(g.cluster, ig)
	g.result.Warnings = append(g.result.Warnings, warnings...)
	if len(ig.Spec.CloudLabels) > 0 || len(g.cluster.Spec.CloudLabels) == 0 {
		doc.Trace("spec.tags", src, "spec.cloudLabels")
	} else {
		doc.Trace("spec.tags", g.clusterSource, "spec.cloudLabels")
	}
	publicIP, err := g.associatePublicIP(ig)
	if err != nil {
		return nil, at("spec.subnets", err)
	}
	doc.Trace("spec.associatePublicIPAddress", src, "spec.associatePublicIp")
	rootDevice := g.rootDeviceName(ig, term)
	mappings := []*awsv1.BlockDeviceMapping{rootVolumeMapping(ig, rootDevice)}
	traceRootVolume(doc, src, ig)

	securityGroups := []awsv1.SecurityGroupSelectorTerm{}
	if ig.Spec.SecurityGroupOverride != nil {
		doc.TraceParsed("spec.securityGroupSelectorTerms[0]", src, "spec.securityGroupOverride")
		securityGroups = append(securityGroups, awsv1.SecurityGroupSelectorTerm{ID: *ig.Spec.SecurityGroupOverride})
	} else {
		securityGroups = append(securityGroups, awsv1.SecurityGroupSelectorTerm{Tags: map[string]string{
			tagClusterName: cluster,
			"Name":         nodesName(cluster),
		}})
	}
	for i, id := range ig.Spec.AdditionalSecurityGroups {
		doc.TraceParsed(fmt.Sprintf("spec.securityGroupSelectorTerms[%d]", len(securityGroups)), src, fmt.Sprintf("spec.additionalSecurityGroups[%d]", i))
		securityGroups = append(securityGroups, awsv1.SecurityGroupSelectorTerm{ID: id})
	}
	doc.Trace("spec.kubelet", src, "spec.kubelet")

	nodeClass := &awsv1.EC2NodeClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: awsv1.SchemeGroupVersion.String(), Kind: "EC2NodeClass"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: addonLabels()},
		Spec: awsv1.EC2NodeClassSpec{
			AMIFamily:                ptr.To(awsv1.AMIFamilyCustom),
			AMISelectorTerms:         []awsv1.AMISelectorTerm{term},
			AssociatePublicIPAddress: publicIP,
			BlockDeviceMappings:      mappings,
			Tags:                     tags,
			SubnetSelectorTerms: []awsv1.SubnetSelectorTerm{{Tags: map[string]string{
				tagClusterName:                cluster,
				tagSubnetInstanceGroup + name: "true",
			}}},
			SecurityGroupSelectorTerms: securityGroups,
			InstanceProfile:            ptr.To(profile),
			UserData:                   ptr.To(g.userData(ig)),
			Kubelet:                    g.kubelet(ig),
		},
	}
	g.warnUnmapped(ig)
	return nodeClass, nil
}

// instanceProfile is the group's custom instance profile (the last part of its ARN) or the
// kOps node instance profile.
func instanceProfile(c *Cluster, ig *InstanceGroup) (string, error) {
	if ig.Spec.IAM == nil || ig.Spec.IAM.Profile == nil {
		return truncateName(nodesName(c.Metadata.Name), maxIAMNameLength), nil
	}
	arn := *ig.Spec.IAM.Profile
	if arn == "" {
		return "", errors.New("unable to parse role arn as it is not set")
	}
	name := arn[strings.LastIndex(arn, "/")+1:]
	if name == "" {
		return "", fmt.Errorf("unable to parse role arn %q", arn)
	}
	return name, nil
}

// groupSubnets are the cluster subnets of the group: those it names or, when it names none,
// kOps' default for nodes: the subnets neither utility nor dual-stack, else every subnet but
// the utility ones.
func (g *generator) groupSubnets(ig *InstanceGroup) ([]Subnet, error) {
	all := g.cluster.Spec.subnets()
	names := ig.Spec.Subnets
	if len(names) == 0 {
		names = defaultNodeSubnets(all)
	}
	var subnets []Subnet
	for _, name := range names {
		var matches []Subnet
		for _, s := range all {
			if s.Name == name {
				matches = append(matches, s)
			}
		}
		switch len(matches) {
		case 0:
			return nil, fmt.Errorf("InstanceGroup %q: subnet not found: %q", ig.Metadata.Name, name)
		case 1:
			subnets = append(subnets, matches[0])
		default:
			return nil, fmt.Errorf("InstanceGroup %q: found multiple subnets with name: %q", ig.Metadata.Name, name)
		}
	}
	return subnets, nil
}

// defaultNodeSubnets are the subnets kOps gives a node group that names none.
func defaultNodeSubnets(all []Subnet) []string {
	var names []string
	for _, s := range all {
		if s.Type != subnetTypeUtility && s.Type != subnetTypeDualStack {
			names = append(names, s.Name)
		}
	}
	if len(names) > 0 {
		return names
	}
	for _, s := range all {
		if s.Type != subnetTypeUtility {
			names = append(names, s.Name)
		}
	}
	return names
}

// associatePublicIP follows the type of the group's first subnet: public and utility subnets
// get a public IP unless the group says otherwise; private and dual-stack subnets never do.
func (g *generator) associatePublicIP(ig *InstanceGroup) (*bool, error) {
	subnets, err := g.groupSubnets(ig)
	if err != nil {
		return nil, err
	}
	if len(subnets) == 0 {
		return nil, fmt.Errorf("could not determine any subnets for InstanceGroup %q; subnets was %s", ig.Metadata.Name, ig.Spec.Subnets)
	}
	for _, s := range subnets {
		if s.ID != "" {
			g.result.Warnf("InstanceGroup %q: subnet %q (%s) was not created by kOps, which does not tag it; tag it %s%s=true or Karpenter finds no subnet there",
				ig.Metadata.Name, s.Name, s.ID, tagSubnetInstanceGroup, ig.Metadata.Name)
		}
	}
	switch subnets[0].Type {
	case subnetTypePublic, subnetTypeUtility:
		if ig.Spec.AssociatePublicIP != nil {
			return ptr.To(*ig.Spec.AssociatePublicIP), nil
		}
		return ptr.To(true), nil
	case subnetTypePrivate, subnetTypeDualStack:
		return ptr.To(false), nil
	default:
		return nil, fmt.Errorf("unknown subnet type %q for InstanceGroup %q", subnets[0].Type, ig.Metadata.Name)
	}
}

// rootDeviceName is the root device of the group's image. kOps asks EC2; offline it comes from
// the options, else it is assumed and the assumption reported.
func (g *generator) rootDeviceName(ig *InstanceGroup, term awsv1.AMISelectorTerm) string {
	if name := g.opts.RootDeviceNames[ig.Metadata.Name]; name != "" {
		return name
	}
	if g.opts.RootDeviceName != "" {
		return g.opts.RootDeviceName
	}
	hint := ""
	if term.Owner == ubuntuAccount {
		hint = fmt.Sprintf(" (Ubuntu images usually use %s)", ubuntuRootDeviceName)
	}
	g.result.Warnf("InstanceGroup %q: the root device name of image %q needs EC2 to resolve; assuming %s%s: set --root-device-name if the image uses another",
		ig.Metadata.Name, strings.TrimSpace(ig.Spec.Image), defaultRootDeviceName, hint)
	return defaultRootDeviceName
}

// traceRootVolume ties the root volume mapping to the fields it comes from: the v1alpha3
// rootVolume block's, else the v1alpha2 rootVolume… fields.
func traceRootVolume(doc *convert.Document, src convert.Source, ig *InstanceGroup) {
	block := ig.Spec.RootVolume
	for _, f := range []struct {
		output, block, flat string
		inBlock             bool
	}{
		{"volumeSize", "size", "rootVolumeSize", block != nil && block.Size != nil},
		{"volumeType", "type", "rootVolumeType", block != nil && block.Type != nil},
		{"iops", "iops", "rootVolumeIops", block != nil && block.IOPS != nil},
		{"throughput", "throughput", "rootVolumeThroughput", block != nil && block.Throughput != nil},
		{"kmsKeyID", "encryptionKey", "rootVolumeEncryptionKey", block != nil && block.EncryptionKey != nil},
	} {
		input := "spec." + f.flat
		if f.inBlock {
			input = "spec.rootVolume." + f.block
		}
		doc.TraceParsed("spec.blockDeviceMappings[0].ebs."+f.output, src, input)
	}
	doc.TraceParsed("spec.blockDeviceMappings[0].deviceName", convert.Source{}, "--root-device-name")
}

// rootVolumeMapping is the one block device mapping kOps generates, for the root volume.
func rootVolumeMapping(ig *InstanceGroup, deviceName string) *awsv1.BlockDeviceMapping {
	v := ig.Spec.rootVolume()
	size := int32(defaultNodeVolumeSize)
	if v.Size != nil && *v.Size > 0 {
		size = *v.Size
	}
	volumeType := defaultVolumeType
	if v.Type != nil && *v.Type != "" {
		volumeType = *v.Type
	}
	encrypted := true
	if v.Encryption != nil {
		encrypted = *v.Encryption
	}
	ebs := &awsv1.BlockDevice{
		DeleteOnTermination: ptr.To(true),
		Encrypted:           ptr.To(encrypted),
		VolumeSize:          ptr.To(resource.MustParse(fmt.Sprintf("%dGi", size))),
		VolumeType:          ptr.To(volumeType),
	}
	if v.Encryption != nil && *v.Encryption && v.EncryptionKey != nil && *v.EncryptionKey != "" {
		ebs.KMSKeyID = ptr.To(*v.EncryptionKey)
	}
	iops := int64(0)
	if v.IOPS != nil {
		iops = int64(*v.IOPS)
	}
	throughput := int64(0)
	if v.Throughput != nil {
		throughput = int64(*v.Throughput)
	}
	switch volumeType {
	case "io1", "io2":
		ebs.IOPS = ptr.To(max(iops, minimumIoIOPS))
	case "gp3":
		ebs.IOPS = ptr.To(max(iops, minimumGp3IOPS))
		ebs.Throughput = ptr.To(max(throughput, minimumGp3Throughput))
	}
	return &awsv1.BlockDeviceMapping{DeviceName: ptr.To(deviceName), EBS: ebs, RootVolume: true}
}

// userData is the group's nodeup script, or a placeholder that fails the boot loudly.
func (g *generator) userData(ig *InstanceGroup) string {
	name := ig.Metadata.Name
	if script, ok := g.opts.UserData[name]; ok {
		return script
	}
	where := fmt.Sprintf(nodeupScriptStatePathShape, "<configBase>", name)
	if base := strings.TrimRight(g.cluster.Spec.ConfigBase, "/"); base != "" {
		where = fmt.Sprintf(nodeupScriptStatePathShape, base, name)
	}
	g.result.Warnf("InstanceGroup %q: no nodeup script given; EC2NodeClass %q has a placeholder userData that stops the node at boot: copy %s to DIR/%s/nodeupscript.sh and rerun with --user-data-dir DIR",
		name, name, where, name)
	return fmt.Sprintf(`#!/bin/bash
# Placeholder written by karpenter convert kops: replace it with the kOps nodeup script of
# InstanceGroup %q, which kOps keeps in its state store at
# %s
echo "karpenter convert kops: no nodeup script for InstanceGroup %s" >&2
exit 1
`, name, where, name)
}

// kubelet maps the group's kubelet settings that change allocatable capacity; kOps reads them
// from the group only.
func (g *generator) kubelet(ig *InstanceGroup) *awsv1.KubeletConfiguration {
	name := ig.Metadata.Name
	var k Kubelet
	if ig.Spec.Kubelet != nil {
		k = *ig.Spec.Kubelet
	}
	if ck := g.cluster.Spec.Kubelet; ck != nil {
		var unset []string
		if ck.MaxPods != nil && k.MaxPods == nil {
			unset = append(unset, "maxPods")
		}
		if len(ck.SystemReserved) > 0 && len(k.SystemReserved) == 0 {
			unset = append(unset, "systemReserved")
		}
		if len(ck.KubeReserved) > 0 && len(k.KubeReserved) == 0 {
			unset = append(unset, "kubeReserved")
		}
		if len(unset) > 0 {
			g.result.Warnf("InstanceGroup %q: nodeup applies the cluster's spec.kubelet %s, but kOps maps only the InstanceGroup's spec.kubelet to EC2NodeClass %q, so Karpenter computes allocatable capacity without it; set it in the InstanceGroup",
				name, strings.Join(unset, ", "), name)
		}
	}
	if k.MaxPods == nil && len(k.SystemReserved) == 0 && len(k.KubeReserved) == 0 {
		return nil
	}
	return &awsv1.KubeletConfiguration{MaxPods: k.MaxPods, SystemReserved: k.SystemReserved, KubeReserved: k.KubeReserved}
}

// warnUnmapped reports the group's settings kOps does not carry into Karpenter's objects.
func (g *generator) warnUnmapped(ig *InstanceGroup) {
	name := ig.Metadata.Name
	if len(ig.Spec.Volumes) > 0 || len(ig.Spec.VolumeMounts) > 0 {
		g.result.Warnf("InstanceGroup %q: spec.volumes and spec.volumeMounts are not mapped to EC2NodeClass %q; its nodes get the root volume only", name, name)
	}
	if v := ig.Spec.rootVolume(); v.Optimization != nil {
		g.result.Warnf("InstanceGroup %q: root volume optimization is not mapped to EC2NodeClass %q", name, name)
	}
	if p := ig.Spec.MixedInstancesPolicy; p != nil {
		var ignored []string
		if p.InstanceRequirements != nil {
			ignored = append(ignored, "instanceRequirements")
		}
		if p.OnDemandBase != nil {
			ignored = append(ignored, "onDemandBase")
		}
		if p.SpotAllocationStrategy != nil {
			ignored = append(ignored, "spotAllocationStrategy")
		}
		if p.SpotInstancePools != nil {
			ignored = append(ignored, "spotInstancePools")
		}
		if len(ignored) > 0 {
			g.result.Warnf("InstanceGroup %q: kOps 1.36 does not use mixedInstancesPolicy %s for NodePool %q", name, strings.Join(ignored, ", "), name)
		}
	}
}
