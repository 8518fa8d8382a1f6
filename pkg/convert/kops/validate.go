package kops

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
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
	if legacy {
		return errs
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

// objectErrors prefixes each field error with the object it is about.
func objectErrors(object string, errs field.ErrorList) []error {
	out := make([]error, 0, len(errs))
	for _, err := range errs {
		out = append(out, fmt.Errorf("%s: %w", object, err))
	}
	return out
}
