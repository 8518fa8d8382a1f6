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

// problem is a broken rule and the field of the ClusterConfig it is about.
type problem struct {
	path string
	err  error
}

// validate applies eksctl's rules for Karpenter, with eksctl's messages, and returns the
// parsed Karpenter version. Unlike eksctl, which stops at the first, it returns every problem.
func validate(cfg *ClusterConfig) (version, []problem) {
	var errs []problem
	add := func(path string, err error) { errs = append(errs, problem{path: path, err: err}) }
	if cfg.Metadata.Name == "" {
		add("metadata.name", errors.New("metadata.name must be set"))
	}
	if cfg.Outpost != nil {
		if cfg.Outpost.ControlPlaneOutpostARN == "" {
			add("outpost.controlPlaneOutpostARN", errors.New("outpost.controlPlaneOutpostARN is required for Outposts"))
		} else if cfg.Karpenter != nil {
			add("outpost", errors.New("Karpenter is not supported on Outposts"))
		}
	}
	if cfg.Karpenter == nil {
		add("", errors.New("the ClusterConfig has no karpenter section: eksctl installs Karpenter only when it is there"))
		return version{}, errs
	}
	if withoutVPCCNI(cfg) {
		add("addonsConfig.disableDefaultAddons", errors.New(bareClusterMessage))
	}
	var v version
	switch raw := cfg.Karpenter.Version; {
	case raw == "":
		add("karpenter.version", karpenterConfigError(errors.New("version field is required if installing Karpenter is enabled")))
	default:
		parsed, err := parseVersion(raw)
		switch {
		case err != nil:
			add("karpenter.version", karpenterConfigError(fmt.Errorf("failed to parse Karpenter version %q: %w", raw, err)))
		case parsed.lessThan(minimumVersion):
			add("karpenter.version", karpenterConfigError(fmt.Errorf("minimum supported version is %s", minimumVersion.original)))
		default:
			v = parsed
		}
	}
	if cfg.IAM != nil && cfg.IAM.WithOIDC != nil && !*cfg.IAM.WithOIDC {
		add("iam.withOIDC", karpenterConfigError(errors.New("iam.withOIDC must be enabled with Karpenter")))
	}
	return v, errs
}
