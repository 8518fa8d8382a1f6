package cloudprovider

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
)

// Reasons of a ValidationSucceeded condition that refuses an EC2NodeClass's kubelet
// configuration, as Karpenter's AWS provider v1.15 names them.
const (
	// ReasonInvalidKubeletConfiguration: a field is not one of the upstream kubelet
	// configuration, has a value of another type, or breaks one of Karpenter's rules.
	ReasonInvalidKubeletConfiguration = "InvalidKubeletConfiguration"
	// ReasonKubeletExpressionsDisabled: a field holds a CEL expression, which needs the
	// NodeClassCEL gate.
	ReasonKubeletExpressionsDisabled = "KubeletExpressionsDisabled"
	// ReasonKubeletExpressionInvalid: with the NodeClassCEL gate, an expression does not
	// compile (syntax, an unknown variable, a result that is not a number).
	ReasonKubeletExpressionInvalid = "KubeletExpressionInvalid"
	// ReasonKubeletExpressionEvaluationFailed: with the NodeClassCEL gate, an expression fails
	// or gives an unusable value for some instance type (InstanceTypeOptions.EvaluateKubelet).
	ReasonKubeletExpressionEvaluationFailed = "KubeletExpressionEvaluationFailed"
	// ReasonUnsupportedKubeletConfiguration: the AMI family would not apply a field.
	ReasonUnsupportedKubeletConfiguration = "UnsupportedKubeletConfiguration"
)

// Reasons of a ValidationSucceeded condition that refuses an EC2NodeClass's
// karpenter.k8s.aws/nvidia-consumable-capacity annotation, as the AWS provider v1.15.2's.
const (
	// ReasonNVIDIAConsumableCapacityInvalid: the value is not one the NVIDIA DRA driver takes.
	ReasonNVIDIAConsumableCapacityInvalid = "NVIDIAConsumableCapacityInvalid"
	// ReasonDRADisabled: the value asks for GPU sharing, which needs the DRANVIDIAGPU gate.
	ReasonDRADisabled = "DRADisabled"
)

// Reasons of a ValidationSucceeded condition that refuses, in the simulated cloud and
// simulate, an EC2NodeClass asking for what the AWS provider launches but they do not model
// (ValidateSimulated).
const (
	// ReasonAMIFamilyNotSupported: spec.amiFamily (or its alias) is a Windows family.
	ReasonAMIFamilyNotSupported = "AMIFamilyNotSupported"
	// ReasonPlacementGroupsNotSupported: spec.placementGroupSelector is set.
	ReasonPlacementGroupsNotSupported = "PlacementGroupsNotSupported"
)

// ValidateSimulated refuses what an EC2NodeClass may ask for that the simulated cloud (package
// sim) and simulate do not model, where the AWS provider launches it: the Windows AMI families
// (the simulated kubelet is a Linux one and the simulated images are Linux images, so a
// simulation of Windows nodes would report what no cluster does), and a placement group (the
// simulated cloud has none to resolve or launch into, so its instances would silently land
// outside it). It returns the ValidationSucceeded reason, the field and the error, or "", ""
// and nil.
func ValidateSimulated(nc *awsv1.EC2NodeClass) (reason, field string, err error) {
	if nc.Spec.PlacementGroupSelector != nil {
		return ReasonPlacementGroupsNotSupported, "spec.placementGroupSelector",
			errors.New("spec.placementGroupSelector: the simulated cloud (karpenter simulate, --cloud-provider sim) has no placement groups to resolve or launch into; remove the selector to simulate without one (the AWS provider supports it)")
	}
	if family := OptionsFromNodeClass(nc).AMIFamily; strings.HasPrefix(family, "Windows") {
		return ReasonAMIFamilyNotSupported, "spec.amiFamily",
			fmt.Errorf("spec.amiFamily: %s (from the AMI family or alias): the simulated cloud does not model Windows nodes yet (the AWS provider launches them); simulate with AL2023, AL2, Bottlerocket or Custom", family)
	}
	return "", "", nil
}

// ValidateNVIDIAConsumableCapacity checks an EC2NodeClass's
// karpenter.k8s.aws/nvidia-consumable-capacity annotation as the AWS provider v1.15.2's
// validation (pkg/controllers/nodeclass/validation.go, with nvidiadra.ParseConsumableCapacity):
// absent, empty or "disabled" asks for nothing; "memory", "unlimited" or a positive share count
// asks for GPU sharing, refused without the DRANVIDIAGPU gate (draNVIDIAGPU); anything else is
// refused as a mistake. It returns the ValidationSucceeded reason with the error, or "" and nil.
func ValidateNVIDIAConsumableCapacity(nc *awsv1.EC2NodeClass, draNVIDIAGPU bool) (string, error) {
	value, ok := nc.Annotations[awsv1.AnnotationNVIDIAConsumableCapacity]
	if !ok {
		return "", nil
	}
	switch value {
	case "", "disabled":
		return "", nil
	case "memory", "unlimited":
	default:
		if n, err := strconv.ParseInt(value, 10, 64); err != nil || n < 1 {
			return ReasonNVIDIAConsumableCapacityInvalid, fmt.Errorf("annotation %s, %q is not one of %q, %q, %q, or a positive integer share count",
				awsv1.AnnotationNVIDIAConsumableCapacity, value, "disabled", "memory", "unlimited")
		}
	}
	if !draNVIDIAGPU {
		return ReasonDRADisabled, fmt.Errorf("annotation %s enables GPU sharing, but the DRANVIDIAGPU feature gate is disabled", awsv1.AnnotationNVIDIAConsumableCapacity)
	}
	return "", nil
}

// ValidateKubelet checks an EC2NodeClass's kubelet configuration as Karpenter's AWS provider
// v1.15 does before it lets the NodeClass launch, since the API server takes any object there:
//   - awsv1.KubeletConfiguration.Validate: fields and values of the upstream configuration,
//     and Karpenter's rules;
//   - CEL expressions (a string maxPods, a kubeReserved or systemReserved value that is not a
//     quantity) need the AWS provider's NodeClassCEL gate (expressions true), off by default:
//     without it they are refused with Karpenter's message; with it each must compile
//     (package kubeletcel), else it is refused naming its field. Whether they evaluate for
//     every instance type is InstanceTypeOptions.EvaluateKubelet's to say, which needs the
//     instance types;
//   - every field reaches the node: only AL2023 renders the whole configuration (nodeadm's
//     NodeConfig); AL2 and Bottlerocket take the fields Karpenter reads and map, so any other
//     field, podsPerCore on Bottlerocket (which has no such setting) and more than one
//     clusterDNS address on either (a single-valued setting) are refused rather than dropped.
//     Custom renders nothing of it (the image bootstraps itself), as with Karpenter.
//
// It returns the reason for the NodeClass's ValidationSucceeded condition with the error, or
// "" and nil. The error joins *awsv1.KubeletError values, each naming its field.
func ValidateKubelet(nc *awsv1.EC2NodeClass, expressions bool) (string, error) {
	k := nc.Spec.Kubelet
	if k == nil {
		return "", nil
	}
	if errs := k.Validate(); len(errs) > 0 {
		return ReasonInvalidKubeletConfiguration, kubeletErrors(errs)
	}
	if len(k.Expressions()) > 0 {
		if !expressions {
			// Karpenter's AWS provider v1.15.2 message, pkg/controllers/nodeclass/validation.go.
			return ReasonKubeletExpressionsDisabled, errors.New("spec.kubelet contains a CEL expression, but the NodeClassCEL feature gate is disabled")
		}
		if err := (InstanceTypeOptions{Kubelet: k, KubeletExpressions: true}).Validate(); err != nil {
			return ReasonKubeletExpressionInvalid, err
		}
	}
	family := OptionsFromNodeClass(nc).AMIFamily
	switch family {
	case "", awsv1.AMIFamilyAL2023, awsv1.AMIFamilyCustom:
		return "", nil
	}
	var errs []error
	unsupported := k.Unmanaged()
	if k.PodsPerCore != nil && family == awsv1.AMIFamilyBottlerocket {
		unsupported = append(unsupported, "podsPerCore")
	}
	if len(unsupported) > 0 {
		errs = append(errs, &awsv1.KubeletError{Field: "spec.kubelet", Detail: fmt.Sprintf(
			"has fields not applied by the %s AMI family that would be silently dropped: %s (only AL2023 takes every kubelet field)", family, strings.Join(unsupported, ", "))})
	}
	if len(k.ClusterDNS) > 1 {
		errs = append(errs, &awsv1.KubeletError{Field: "spec.kubelet.clusterDNS", Detail: fmt.Sprintf(
			"the %s AMI family doesn't accept multiple entries, only one, but %d were set", family, len(k.ClusterDNS))})
	}
	if len(errs) > 0 {
		return ReasonUnsupportedKubeletConfiguration, kubeletErrors(errs)
	}
	return "", nil
}

// kubeletErrors are the reasons a kubelet configuration is refused, in one message joined by
// "; " as Karpenter's condition joins them; errors.As and errors.Is see each.
type kubeletErrors []error

// Error implements error.
func (e kubeletErrors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap returns the errors.
func (e kubeletErrors) Unwrap() []error { return e }
