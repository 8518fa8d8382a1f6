package kops

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/convert"
)

// kOps' values of InstanceGroup spec.role and spec.manager that matter here.
const (
	roleNode         = "Node"
	managerKarpenter = "Karpenter"
)

// validateCluster applies kOps' cluster rules for Karpenter, with kOps' paths and messages.
func validateCluster(c *Cluster, legacy bool) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if !c.Spec.karpenterEnabled() {
		return nil
	}
	if v := c.Spec.KubernetesVersion; v != "" {
		if _, _, ok := kubernetesMinor(v); !ok {
			errs = append(errs, field.Invalid(spec.Child("kubernetesVersion"), v, "must be a Kubernetes version, such as 1.33.1"))
		}
	}
	if c.Spec.IAM == nil || c.Spec.IAM.UseServiceAccountExternalPermissions == nil || !*c.Spec.IAM.UseServiceAccountExternalPermissions {
		errs = append(errs, field.Forbidden(spec.Child("karpenter", "enabled"),
			"Karpenter requires that service accounts use external permissions"))
	}
	if !legacy && c.Spec.nodeTerminationHandler().IsEnabled() {
		errs = append(errs, field.Forbidden(spec.Child("cloudProvider", "aws", "nodeTerminationHandler"),
			"nodeTerminationHandler cannot be used in conjunction with Karpenter"))
	}
	return errs
}

// validateInstanceGroup applies kOps' InstanceGroup rules for Karpenter to a group with
// spec.manager Karpenter. legacy keeps only the rules kOps ≤ 1.33 had (the generation of that
// time used neither the image nor the sizes).
func validateInstanceGroup(c *Cluster, ig *InstanceGroup, legacy bool) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if !c.Spec.isAWS() {
		errs = append(errs, field.Forbidden(spec.Child("manager"), "Karpenter InstanceGroups are only supported on AWS"))
	}
	if ig.Spec.Role != roleNode {
		errs = append(errs, field.Forbidden(spec.Child("role"), "Karpenter InstanceGroups must have role Node"))
	}
	errs = append(errs, validateMachineTypes(ig)...)
	if price := ig.Spec.MaxPrice; price != nil {
		// EC2 takes the spot price limit as a decimal number of dollars an hour.
		if v, err := strconv.ParseFloat(strings.TrimSpace(*price), 64); err != nil || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			errs = append(errs, field.Invalid(spec.Child("maxPrice"), *price, "must be a positive number of dollars an hour, such as \"0.05\""))
		}
	}
	if legacy {
		return errs
	}
	if size := ig.Spec.rootVolume().Size; size != nil && *size > maxRootVolumeGiB {
		path := spec.Child("rootVolumeSize")
		if ig.Spec.RootVolume != nil && ig.Spec.RootVolume.Size != nil {
			path = spec.Child("rootVolume", "size")
		}
		errs = append(errs, field.Invalid(path, *size, fmt.Sprintf("must be at most %d: the EC2NodeClass volumeSize it becomes (%d becomes %dGi) takes at most %dGi", maxRootVolumeGiB, *size, *size, maxRootVolumeGiB)))
	}
	if ig.Spec.MaxSize != nil && *ig.Spec.MaxSize <= 0 {
		errs = append(errs, field.Invalid(spec.Child("maxSize"), *ig.Spec.MaxSize, "must be greater than zero"))
	}
	if image := strings.TrimSpace(ig.Spec.Image); image != "" {
		if _, err := amiSelectorTerm(image); err != nil {
			detail := imageFormDetail
			if errors.Is(err, errSSMParameterRequired) {
				detail = err.Error()
			}
			errs = append(errs, field.Invalid(spec.Child("image"), ig.Spec.Image, detail))
		}
	}
	if ig.Spec.MinSize != nil {
		switch {
		case *ig.Spec.MinSize <= 0:
			errs = append(errs, field.Invalid(spec.Child("minSize"), *ig.Spec.MinSize, "must be greater than zero for static capacity"))
		case !staticCapacityEnabled(c.Spec.Karpenter):
			errs = append(errs, field.Forbidden(spec.Child("minSize"),
				"static capacity requires StaticCapacity=true in cluster.spec.karpenter.featureGates"))
		}
	}
	return errs
}

// maxRootVolumeGiB is the largest volumeSize, in Gi, the EC2NodeClass CRD accepts; kOps writes
// the root volume size as that many Gi.
const maxRootVolumeGiB = 59000

// staticCapacityEnabled reads the StaticCapacity gate as kOps does: unset or empty feature gates
// mean the addon's default (enabled); otherwise the last StaticCapacity=value item decides, and
// only "true" (in any case) enables it.
func staticCapacityEnabled(k *Karpenter) bool {
	if k == nil || k.FeatureGates == "" {
		return true
	}
	enabled := false
	for _, item := range strings.Split(k.FeatureGates, ",") {
		name, value, found := strings.Cut(item, "=")
		if !found || strings.TrimSpace(name) != "StaticCapacity" {
			continue
		}
		enabled = strings.EqualFold(strings.TrimSpace(value), "true")
	}
	return enabled
}

// validateMachineTypes applies kOps' rule that every machine type, of the comma-separated
// spec.machineType and of spec.mixedInstancesPolicy.instances, is an EC2 instance type (an
// empty one, as in "m5.large,," or ",,,,", is none), with kOps' message. kOps asks EC2; offline,
// the EC2 catalog built into this binary answers, and suggests the name meant.
func validateMachineTypes(ig *InstanceGroup) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if ig.Spec.MachineType != "" {
		reported := map[string]bool{}
		for _, typ := range strings.Split(ig.Spec.MachineType, ",") {
			if detail := machineTypeProblem(typ); detail != "" && !reported[detail] {
				reported[detail] = true
				errs = append(errs, field.Invalid(spec.Child("machineType"), ig.Spec.MachineType, detail))
			}
		}
	}
	if p := ig.Spec.MixedInstancesPolicy; p != nil {
		for i, typ := range p.Instances {
			if detail := machineTypeProblem(typ); detail != "" {
				errs = append(errs, field.Invalid(spec.Child("mixedInstancesPolicy", "instances").Index(i), typ, detail))
			}
		}
	}
	return errs
}

// instanceTypeNames are the names of the EC2 catalog's instance types.
var instanceTypeNames = sync.OnceValue(func() []string {
	entries, err := catalog.Load()
	if err != nil {
		return nil
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name
	}
	return names
})

// machineTypeProblem says why a machine type is not an EC2 instance type, or "" when it is.
func machineTypeProblem(typ string) string {
	typ = strings.TrimSpace(typ)
	if typ == "" {
		return "machine type specified is invalid: an empty name (a stray comma?): list instance types such as m6i.large,m5.large"
	}
	if _, ok := catalog.Lookup(typ); ok {
		return ""
	}
	detail := fmt.Sprintf("machine type specified is invalid: %q is not an EC2 instance type (of the %d in this build's catalog)", typ, len(instanceTypeNames()))
	if near := convert.Suggest(typ, instanceTypeNames()); near != "" {
		detail += fmt.Sprintf(": did you mean %s?", near)
	}
	return detail
}
