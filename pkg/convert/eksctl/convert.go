package eksctl

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/openkarpenter/karpenter/pkg/convert"
)

// Options are what the conversion cannot read from the ClusterConfig.
type Options struct {
	// AccountID is the AWS account of the cluster, for the ARNs in the Helm values and the
	// install steps; empty leaves ${AWS_ACCOUNT_ID} for envsubst.
	AccountID string `json:"accountID,omitempty"`
}

// Names eksctl gives Karpenter's pieces.
const (
	namespace          = "karpenter"
	serviceAccount     = "karpenter"
	chart              = "oci://public.ecr.aws/karpenter/karpenter"
	discoveryTag       = "karpenter.sh/discovery"
	accountPlaceholder = "${AWS_ACCOUNT_ID}"
)

var accountID = regexp.MustCompile(`^[0-9]{12}$`)

// cluster is one conversion's input, with the names derived from it.
type cluster struct {
	cfg       *ClusterConfig
	version   version
	name      string
	partition string
	account   string
	queue     bool
}

func (c *cluster) nodeRoleName() string       { return "eksctl-KarpenterNodeRole-" + c.name }
func (c *cluster) controllerRoleName() string { return "eksctl-" + c.name + "-iamservice-role" }
func (c *cluster) policyName() string         { return "eksctl-KarpenterControllerPolicy-" + c.name }
func (c *cluster) stackName() string          { return "eksctl-" + c.name + "-karpenter" }

func (c *cluster) instanceProfileName() string {
	if p := c.cfg.Karpenter.DefaultInstanceProfile; p != nil && *p != "" {
		return *p
	}
	return "eksctl-KarpenterNodeInstanceProfile-" + c.name
}

func (c *cluster) arn(kind, name string) string {
	return fmt.Sprintf("arn:%s:iam::%s:%s/%s", c.partition, c.account, kind, name)
}

// discoveryValue is the value of the cluster's karpenter.sh/discovery tag.
func (c *cluster) discoveryValue() string {
	if v, ok := c.cfg.Metadata.Tags[discoveryTag]; ok && v != "" {
		return v
	}
	return c.name
}

// partitionOf is the AWS partition of a region.
func partitionOf(region string) string {
	switch {
	case strings.HasPrefix(region, "cn-"):
		return "aws-cn"
	case strings.HasPrefix(region, "us-gov-"):
		return "aws-us-gov"
	default:
		return "aws"
	}
}

// Convert reads the one ClusterConfig among sources, validates its karpenter section as eksctl
// does, and returns the files that install Karpenter for it: values.yaml (Helm values),
// cloudformation.yaml (IAM, and the interruption queue and rules) and nodepool.yaml (a starter
// EC2NodeClass and NodePool). Invalid input returns every problem as convert.Errors and no
// documents.
func Convert(sources []convert.Source, opts Options) (*convert.Result, error) {
	result := &convert.Result{}
	var errs convert.Errors
	var cfg *ClusterConfig
	var src convert.Source
	var unknown convert.Errors
	for _, s := range sources {
		if s.APIVersion != APIVersion || s.Kind != Kind {
			result.Warnf("%s: skipping %s %s, which is not an %s %s", s, s.APIVersion, s.Kind, APIVersion, Kind)
			continue
		}
		if cfg != nil {
			errs = append(errs, fmt.Errorf("%s: a second ClusterConfig (the first is at %s): convert one cluster at a time", s.At(""), src.At("")))
			continue
		}
		cfg, src = &ClusterConfig{}, s
		if err := json.Unmarshal(s.JSON, cfg); err != nil {
			errs = append(errs, s.DecodeErrors(err, cfg, s.JSON, json.Unmarshal)...)
			continue
		}
		unknown = unknownKarpenterFields(s)
	}
	if cfg == nil && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("no %s %s in the input", APIVersion, Kind))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	errs = append(errs, unknown...)
	v, problems := validate(cfg)
	for _, p := range problems {
		errs = append(errs, fmt.Errorf("%s: %w", src.At(p.path), p.err))
	}
	if opts.AccountID != "" && !accountID.MatchString(opts.AccountID) {
		errs = append(errs, fmt.Errorf("account ID %q: want 12 digits", opts.AccountID))
	}
	if len(errs) > 0 {
		return nil, errs
	}

	c := &cluster{
		cfg:       cfg,
		version:   v,
		name:      cfg.Metadata.Name,
		partition: partitionOf(cfg.Metadata.Region),
		account:   opts.AccountID,
		queue:     isTrue(cfg.Karpenter.WithSpotInterruptionQueue),
	}
	if c.account == "" {
		c.account = accountPlaceholder
		result.Warnf("no account ID given: the ARNs in values.yaml and the steps use %s (substitute it, or pass --account-id)", accountPlaceholder)
	}
	if cfg.Metadata.Region == "" {
		result.Warnf("metadata.region is not set: assuming the aws partition; deploy the CloudFormation template in the cluster's region")
	}
	c.warn(result)
	nodeClass := convert.Document{File: "nodepool.yaml", Comment: c.starterComment(), Content: c.ec2NodeClass(), From: &src}
	nodeClass.TraceParsed("spec.role", src, "metadata.name")
	for _, terms := range []string{"spec.subnetSelectorTerms", "spec.securityGroupSelectorTerms"} {
		if _, tagged := cfg.Metadata.Tags[discoveryTag]; tagged {
			nodeClass.TraceParsed(terms, src, "metadata.tags["+discoveryTag+"]")
		} else {
			nodeClass.TraceParsed(terms, src, "metadata.name")
		}
	}
	result.Add(
		convert.Document{File: "values.yaml", Comment: c.valuesComment(), Content: c.values()},
		convert.Document{File: "cloudformation.yaml", Comment: c.templateComment(), Content: c.template()},
		nodeClass,
		convert.Document{File: "nodepool.yaml", Content: c.nodePool(), From: &src},
	)
	if err := result.Validate(); err != nil {
		return nil, err
	}
	return result, nil
}

// warn reports what the user must know beyond the files.
func (c *cluster) warn(result *convert.Result) {
	cfg := c.cfg
	if c.version.lessThan(documentedMinimumVersion) {
		result.Warnf("karpenter.version %s: eksctl accepts it (its minimum is %s) but its documentation supports only %s and later",
			cfg.Karpenter.Version, minimumVersion.original, documentedMinimumVersion.original)
	}
	if c.version.lessThan(v1Version) {
		result.Warnf("karpenter.version %s: the starter NodePool and EC2NodeClass use karpenter.sh/v1 and karpenter.k8s.aws/v1, which Karpenter serves from 1.0.0", cfg.Karpenter.Version)
	}
	if c.queue && !c.version.lessThan(settingsRenamedVersion) {
		result.Warnf("eksctl itself sets the Helm value settings.interruptionQueueName, which Karpenter %s ignores (eksctl issue #7697), so interruption handling stays off; values.yaml sets settings.interruptionQueue instead", cfg.Karpenter.Version)
	}
	if _, ok := cfg.Metadata.Tags[discoveryTag]; !ok {
		result.Warnf("metadata.tags has no %s: eksctl then tags neither the subnets nor the cluster security group with it, and the starter EC2NodeClass selects %s=%s; tag them, or add the tag to metadata.tags before creating the cluster",
			discoveryTag, discoveryTag, c.discoveryValue())
	} else if ids := existingSubnets(cfg.VPC); len(ids) > 0 {
		result.Warnf("the cluster uses existing subnets (%s), which eksctl does not tag: tag those Karpenter may use with %s=%s",
			strings.Join(ids, ", "), discoveryTag, c.discoveryValue())
	}
	if isTrue(cfg.Karpenter.CreateServiceAccount) {
		return
	}
	result.Warnf("karpenter.createServiceAccount is false: eksctl creates the service account %s/%s itself (step 2 in values.yaml), and the chart must not", namespace, serviceAccount)
}

// existingSubnets lists the IDs of subnets the ClusterConfig brings.
func existingSubnets(vpc *VPC) []string {
	if vpc == nil || vpc.Subnets == nil {
		return nil
	}
	var ids []string
	for _, group := range []map[string]Subnet{vpc.Subnets.Private, vpc.Subnets.Public} {
		for _, s := range group {
			if s.ID != "" {
				ids = append(ids, s.ID)
			}
		}
	}
	sort.Strings(ids)
	return ids
}

// karpenterFields are all the fields of eksctl's karpenter section. Only this section is checked
// for unknown fields: the others are read in part, and hold many fields this conversion ignores.
var karpenterFields = []string{"version", "createServiceAccount", "defaultInstanceProfile", "withSpotInterruptionQueue"}

// unknownKarpenterFields names the fields of the ClusterConfig's karpenter section that eksctl
// does not know (and so refuses), with the known one each is likely a misspelling of.
func unknownKarpenterFields(src convert.Source) convert.Errors {
	var raw struct {
		Karpenter map[string]json.RawMessage `json:"karpenter"`
	}
	if json.Unmarshal(src.JSON, &raw) != nil {
		return nil
	}
	var errs convert.Errors
	names := make([]string, 0, len(raw.Karpenter))
	for name := range raw.Karpenter {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if slices.Contains(karpenterFields, name) {
			continue
		}
		msg := fmt.Sprintf("%s: unknown field \"karpenter.%s\"", src.At("karpenter."+name), name)
		if near := convert.Suggest(name, karpenterFields); near != "" {
			msg += fmt.Sprintf(": did you mean karpenter.%s?", near)
		}
		errs = append(errs, fmt.Errorf("%s (eksctl refuses fields it does not know; the karpenter section has %s)", msg, strings.Join(karpenterFields, ", ")))
	}
	return errs
}
