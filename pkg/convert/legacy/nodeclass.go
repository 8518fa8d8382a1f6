package legacy

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	awsv1alpha1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1alpha1"
	"github.com/openkarpenter/karpenter/pkg/convert"
)

// The AMI families of Karpenter v0.x.
const (
	familyAL2          = "AL2"
	familyBottlerocket = "Bottlerocket"
	familyUbuntu       = "Ubuntu"
	familyWindows2019  = "Windows2019"
	familyWindows2022  = "Windows2022"
	familyCustom       = "Custom"
)

// ubuntuRootVolume is the root volume Karpenter v0.x gave Ubuntu nodes, which the AL2 family
// (with its /dev/xvda default) does not.
func ubuntuRootVolume() *awsv1.BlockDeviceMapping {
	return &awsv1.BlockDeviceMapping{
		DeviceName: ptr.To("/dev/sda1"),
		EBS: &awsv1.BlockDevice{
			Encrypted:  ptr.To(true),
			VolumeSize: ptr.To(resource.MustParse("20Gi")),
			VolumeType: ptr.To("gp3"),
		},
		RootVolume: true,
	}
}

// addNodeClass adds the EC2NodeClass of a plan to the result, unless it has errors.
func (c *converter) addNodeClass(plan *nodeClassPlan) {
	doc := convert.Document{File: "ec2nodeclass-" + plan.nodeClassName + ".yaml"}
	if nodeClass := c.nodeClass(plan, &doc); nodeClass != nil {
		doc.Content = nodeClass
		c.result.Add(doc)
	}
}

// nodeClass translates the AWS settings of a plan: an AWSNodeTemplate or an inline provider,
// with the kubelet settings of its Provisioners. It traces in doc which input field each part
// comes from.
func (c *converter) nodeClass(plan *nodeClassPlan, doc *convert.Document) *awsv1.EC2NodeClass {
	var (
		spec   awsv1alpha1.AWSNodeTemplateSpec
		label  string
		src    convert.Source
		path   = field.NewPath("spec")
		labels map[string]string
		notes  map[string]string
	)
	if plan.template != nil {
		spec = plan.template.obj.Spec
		label, src = plan.template.label, plan.template.src
		if plan.nodeClassName != plan.template.obj.Name {
			label = fmt.Sprintf("%s (EC2NodeClass %q)", label, plan.nodeClassName)
			doc.Trace("metadata.name", plan.kubeletFrom.src, "metadata.name")
		}
		labels, notes = plan.template.obj.Labels, withoutLastApplied(plan.template.obj.Annotations)
		doc.Trace("metadata", src, "metadata")
	} else {
		spec = awsv1alpha1.AWSNodeTemplateSpec{AWS: *plan.inline}
		label, src = plan.owner.label, plan.owner.src
		path = path.Child("provider")
		doc.Trace("metadata.name", src, "metadata.name")
	}
	doc.From = &src
	for _, same := range []struct{ output, input string }{
		{"userData", "userData"},
		{"context", "context"},
		{"detailedMonitoring", "detailedMonitoring"},
		{"metadataOptions", "metadataOptions"},
		{"blockDeviceMappings", "blockDeviceMappings"},
		{"amiFamily", "amiFamily"},
		{"instanceProfile", "instanceProfile"},
		{"tags", "tags"},
	} {
		doc.Trace("spec."+same.output, src, path.Child(same.input).String())
	}
	// v0.x selectors are maps of comma-separated values; v1 terms are built from them.
	for _, built := range []struct{ output, input string }{
		{"subnetSelectorTerms", "subnetSelector"},
		{"securityGroupSelectorTerms", "securityGroupSelector"},
		{"amiSelectorTerms", "amiSelector"},
	} {
		doc.TraceParsed("spec."+built.output, src, path.Child(built.input).String())
	}
	if plan.kubeletFrom != nil {
		doc.Trace("spec.kubelet", plan.kubeletFrom.src, "spec.kubeletConfiguration")
	}
	errorsBefore := len(c.errs)
	fail := func(err *field.Error) { c.errs = append(c.errs, src.FieldError(err)) }
	report := func(p *field.Path, format string, args ...any) {
		c.result.Warnf("%s: %s: %s", label, p, fmt.Sprintf(format, args...))
	}

	nodeClass := &awsv1.EC2NodeClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: awsv1.SchemeGroupVersion.String(), Kind: "EC2NodeClass"},
		ObjectMeta: metav1.ObjectMeta{Name: plan.nodeClassName, Labels: labels, Annotations: notes},
		Spec: awsv1.EC2NodeClassSpec{
			UserData:            spec.UserData,
			Context:             spec.Context,
			DetailedMonitoring:  spec.DetailedMonitoring,
			MetadataOptions:     spec.MetadataOptions,
			BlockDeviceMappings: spec.BlockDeviceMappings,
			Kubelet:             plan.kubelet,
		},
	}

	if spec.LaunchTemplateName != nil {
		fail(field.Forbidden(path.Child("launchTemplate"), fmt.Sprintf(
			"EC2NodeClass has no launch template: move the image, security groups, user data, instance profile and block devices of %s into amiSelector, securityGroupSelector, userData, instanceProfile and blockDeviceMappings",
			*spec.LaunchTemplateName)))
	}

	// Subnets and security groups.
	if len(spec.SubnetSelector) == 0 {
		fail(field.Required(path.Child("subnetSelector"), "EC2NodeClass needs subnetSelectorTerms"))
	} else {
		terms, dropped, err := subnetTerms(spec.SubnetSelector)
		if dropped != "" {
			report(path.Child("subnetSelector"), "%s", dropped)
		}
		if err != nil {
			fail(field.Invalid(path.Child("subnetSelector"), field.OmitValueType{}, err.Error()))
		}
		nodeClass.Spec.SubnetSelectorTerms = terms
	}
	if len(spec.SecurityGroupSelector) == 0 {
		fail(field.Required(path.Child("securityGroupSelector"), "EC2NodeClass needs securityGroupSelectorTerms"))
	} else {
		terms, dropped, err := securityGroupTerms(spec.SecurityGroupSelector)
		if dropped != "" {
			report(path.Child("securityGroupSelector"), "%s", dropped)
		}
		if err != nil {
			fail(field.Invalid(path.Child("securityGroupSelector"), field.OmitValueType{}, err.Error()))
		}
		nodeClass.Spec.SecurityGroupSelectorTerms = terms
	}

	// Image.
	family := familyAL2
	if spec.AMIFamily != nil {
		family = *spec.AMIFamily
	}
	familyPath := path.Child("amiFamily")
	switch family {
	case familyAL2, familyBottlerocket, familyWindows2019, familyWindows2022, familyCustom, familyUbuntu:
	default:
		fail(field.NotSupported(familyPath, family, []string{familyAL2, familyBottlerocket, familyUbuntu, familyWindows2019, familyWindows2022, familyCustom}))
	}
	if len(spec.AMISelector) == 0 {
		switch family {
		case familyCustom:
			fail(field.Required(path.Child("amiSelector"), "amiFamily Custom needs an amiSelector"))
		case familyUbuntu:
			fail(field.Invalid(familyPath, family, "v1 has no Ubuntu family: add an amiSelector for your Ubuntu EKS images (converted with amiFamily AL2, whose bootstrap they share) or move to AL2023 or Bottlerocket"))
		default:
			alias := strings.ToLower(family) + "@latest"
			nodeClass.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: alias}}
			if spec.AMIFamily == nil {
				report(familyPath, "not set, so Karpenter v0.x used AL2: written as alias %s (AL2 has no images for Kubernetes 1.33 and later; consider al2023@latest)", alias)
			}
		}
	} else {
		terms, dropped, err := amiTerms(spec.AMISelector)
		if err != nil {
			fail(field.Invalid(path.Child("amiSelector"), field.OmitValueType{}, err.Error()))
		}
		if dropped != "" {
			report(path.Child("amiSelector"), "%s", dropped)
		}
		nodeClass.Spec.AMISelectorTerms = terms
		v1Family := family
		if family == familyUbuntu {
			v1Family = awsv1.AMIFamilyAL2
			report(familyPath, "v1 has no Ubuntu family: written as AL2, whose bootstrap Ubuntu's EKS images share")
			if len(spec.BlockDeviceMappings) == 0 {
				nodeClass.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{ubuntuRootVolume()}
				report(path.Child("blockDeviceMappings"), "added Ubuntu's root volume (/dev/sda1, 20Gi gp3, encrypted), which v0.x gave Ubuntu nodes and AL2 does not")
			}
		}
		nodeClass.Spec.AMIFamily = ptr.To(v1Family)
	}

	// Bottlerocket has no pods-per-core setting: Karpenter v0.x ignored podsPerCore on its nodes,
	// and v1.15's controller refuses it there, so it is dropped, with a warning.
	if k := nodeClass.Spec.Kubelet; family == familyBottlerocket && k != nil && k.PodsPerCore != nil {
		k = k.DeepCopy() // the plan's kubelet may be shared
		k.PodsPerCore = nil
		if isZero(k) && len(k.Other) == 0 {
			k = nil
		}
		nodeClass.Spec.Kubelet = k
		if plan.kubeletFrom != nil {
			c.result.Warnf("%s: spec.kubeletConfiguration.podsPerCore: dropped: Bottlerocket has no pods-per-core setting (Karpenter v0.x ignored it on Bottlerocket nodes, and v1.15 refuses it there)", plan.kubeletFrom.label)
		}
	}

	// Identity.
	switch {
	case spec.InstanceProfile != nil && *spec.InstanceProfile != "":
		nodeClass.Spec.InstanceProfile = ptr.To(*spec.InstanceProfile)
	case c.opts.InstanceProfile != "":
		nodeClass.Spec.InstanceProfile = ptr.To(c.opts.InstanceProfile)
		doc.TraceParsed("spec.instanceProfile", convert.Source{}, "--instance-profile")
	case c.opts.Role != "":
		nodeClass.Spec.Role = c.opts.Role
		doc.TraceParsed("spec.role", convert.Source{}, "--role")
	default:
		fail(field.Required(path.Child("instanceProfile"),
			"Karpenter v0.x used its aws.defaultInstanceProfile setting: give that instance profile (--instance-profile) or its role (--role)"))
	}

	// Tags.
	for _, key := range sortedKeys(spec.Tags) {
		if convert.ReservedTag(key) {
			report(path.Child("tags").Key(key), "dropped: v1 reserves it")
			continue
		}
		if nodeClass.Spec.Tags == nil {
			nodeClass.Spec.Tags = map[string]string{}
		}
		nodeClass.Spec.Tags[key] = spec.Tags[key]
	}

	if len(c.errs) > errorsBefore {
		return nil
	}
	return nodeClass
}
