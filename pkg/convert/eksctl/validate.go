package eksctl

import (
	"errors"
	"fmt"
)

// Versions eksctl checks against.
var (
	// minimumVersion is eksctl's supportedKarpenterVersion: older versions are refused.
	minimumVersion = mustParseVersion("v0.20.0")
	// documentedMinimumVersion is the oldest version eksctl's documentation supports.
	documentedMinimumVersion = mustParseVersion("0.28.0")
	// settingsRenamedVersion moved the chart's settings.aws.* values to settings.* (and
	// interruptionQueueName to interruptionQueue).
	settingsRenamedVersion = mustParseVersion("0.32.0")
	// awsSettingsRemovedVersion removed settings.aws.*, and so defaultInstanceProfile.
	awsSettingsRemovedVersion = mustParseVersion("0.33.0")
	// v1Version serves the karpenter.sh/v1 APIs the starter objects use.
	v1Version = mustParseVersion("1.0.0")
)

// vpcCNIAddon is the name of the VPC CNI addon.
const vpcCNIAddon = "vpc-cni"

// bareClusterMessage is eksctl's refusal of Karpenter (among other fields) when the cluster is
// created without VPC CNI and without Auto Mode.
const bareClusterMessage = "fields nodeGroups, managedNodeGroups, fargateProfiles, karpenter, gitops, iam.serviceAccounts, " +
	"and iam.podIdentityAssociations are not supported during cluster creation in a cluster without VPC CNI if Auto Mode is disabled"

// withoutVPCCNI reports whether eksctl creates the cluster without VPC CNI and without Auto
// Mode: the default addons are turned off and the addons section does not list vpc-cni.
func withoutVPCCNI(cfg *ClusterConfig) bool {
	if cfg.AddonsConfig == nil || !cfg.AddonsConfig.DisableDefaultAddons {
		return false
	}
	if cfg.AutoModeConfig != nil && isTrue(cfg.AutoModeConfig.Enabled) {
		return false
	}
	for _, a := range cfg.Addons {
		if a.Name == vpcCNIAddon {
			return false
		}
	}
	return true
}

// karpenterConfigError wraps a problem of the karpenter section as eksctl does.
func karpenterConfigError(err error) error {
	return fmt.Errorf("failed to validate Karpenter config: %w", err)
}

// validate applies eksctl's rules for Karpenter, with eksctl's messages, and returns the
// parsed Karpenter version. Unlike eksctl, which stops at the first, it returns every problem.
func validate(cfg *ClusterConfig) (version, []error) {
	var errs []error
	if cfg.Metadata.Name == "" {
		errs = append(errs, errors.New("metadata.name must be set"))
	}
	if cfg.Outpost != nil {
		if cfg.Outpost.ControlPlaneOutpostARN == "" {
			errs = append(errs, errors.New("outpost.controlPlaneOutpostARN is required for Outposts"))
		} else if cfg.Karpenter != nil {
			errs = append(errs, errors.New("Karpenter is not supported on Outposts"))
		}
	}
	if cfg.Karpenter == nil {
		return version{}, append(errs, errors.New("the ClusterConfig has no karpenter section: eksctl installs Karpenter only when it is there"))
	}
	if withoutVPCCNI(cfg) {
		errs = append(errs, errors.New(bareClusterMessage))
	}
	var v version
	switch raw := cfg.Karpenter.Version; {
	case raw == "":
		errs = append(errs, karpenterConfigError(errors.New("version field is required if installing Karpenter is enabled")))
	default:
		parsed, err := parseVersion(raw)
		switch {
		case err != nil:
			errs = append(errs, karpenterConfigError(fmt.Errorf("failed to parse Karpenter version %q: %w", raw, err)))
		case parsed.lessThan(minimumVersion):
			errs = append(errs, karpenterConfigError(fmt.Errorf("minimum supported version is %s", minimumVersion.original)))
		default:
			v = parsed
		}
	}
	if cfg.IAM != nil && cfg.IAM.WithOIDC != nil && !*cfg.IAM.WithOIDC {
		errs = append(errs, karpenterConfigError(errors.New("iam.withOIDC must be enabled with Karpenter")))
	}
	return v, errs
}
