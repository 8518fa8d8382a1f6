package aws

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// Reasons of a ValidationSucceeded condition the launch check sets, as the AWS provider v1.15.2
// names them (pkg/controllers/nodeclass/validation.go).
const (
	// ReasonCreateLaunchTemplateAuthCheckFailed: EC2 refused to create the check's launch
	// template (UnauthorizedOperation).
	ReasonCreateLaunchTemplateAuthCheckFailed = "CreateLaunchTemplateAuthCheckFailed"
	// ReasonCreateFleetAuthCheckFailed: the dry-run CreateFleet was refused.
	ReasonCreateFleetAuthCheckFailed = "CreateFleetAuthCheckFailed"
	// ReasonRunInstancesAuthCheckFailed: the dry-run RunInstances was refused in every subnet.
	ReasonRunInstancesAuthCheckFailed = "RunInstancesAuthCheckFailed"
	// ReasonInstanceProfileNotFound: the NodeClass's spec.instanceProfile does not exist, as
	// the dry-run RunInstances found.
	ReasonInstanceProfileNotFound = "InstanceProfileNotFound"
	// ReasonUserDataSizeLimitExceeded: EC2 refused the check's launch template because its
	// rendered user data is over EC2's limit.
	ReasonUserDataSizeLimitExceeded = "UserDataSizeLimitExceeded"
	// ReasonDependenciesNotReady: the NodeClass's images, instance profile, security groups or
	// subnets are not resolved, so no launch can be checked.
	ReasonDependenciesNotReady = "DependenciesNotReady"
)

// reasonAwaitingReconciliation is the reason of a ValidationSucceeded condition left Unknown
// because the launch check could not finish (throttled, a server error, an error it does not
// expect), as Karpenter's conditions start out; a condition already set is left as it is.
const reasonAwaitingReconciliation = "AwaitingReconciliation"

// launchCheckMessages open the message of each failed check; the rest is why, as
// launchCheckReason words the EC2 error.
var launchCheckMessages = map[string]string{
	ReasonCreateLaunchTemplateAuthCheckFailed: "Controller isn't authorized to call ec2:CreateLaunchTemplate",
	ReasonCreateFleetAuthCheckFailed:          "Controller isn't authorized to call ec2:CreateFleet",
	ReasonRunInstancesAuthCheckFailed:         "Controller isn't authorized to call ec2:RunInstances",
	ReasonUserDataSizeLimitExceeded:           "ec2:CreateLaunchTemplate rejected the rendered user data as too large",
}

// launchCheckTTL is how long a launch check's result stands for unchanged inputs: the AWS
// provider v1.15.2's ValidationTTL (its operator jitters it by up to five minutes either way;
// here it is fixed, so a check's expiry is deterministic).
const launchCheckTTL = 30 * time.Minute

// windowsFamilies check their launch with the fallback instance types, whatever their
// NodePools allow (see launchCheckType).
var windowsFamilies = []string{awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025}

// fallbackCheckTypes are the instance types a launch is checked with when no NodePool's
// requirements select one, in order: one amd64 and one arm64 standard type.
var fallbackCheckTypes = []string{"m5.large", "m6g.large"}

// launchVerdict is what the launch check says of ValidationSucceeded. An empty status leaves the
// condition as it is (Unknown when there is none yet), with the message saying why.
type launchVerdict struct {
	status          metav1.ConditionStatus
	reason, message string
}

// launchCheckPassed is the verdict of a check that passed, or was skipped (DisableDryRun).
var launchCheckPassed = launchVerdict{status: metav1.ConditionTrue, reason: awsv1.ConditionTypeValidationSucceeded}

// retryVerdict leaves the condition as it is: the check could not finish and runs again at the
// NodeClass's next reconcile.
func retryVerdict(format string, args ...any) launchVerdict {
	return launchVerdict{reason: reasonAwaitingReconciliation, message: fmt.Sprintf(format, args...)}
}

// launchChecks remembers each NodeClass's last launch check, by name: the key of its inputs,
// when it ran and its verdict.
type launchChecks struct {
	mu     sync.Mutex
	byName map[string]launchCheckResult
}

// launchCheckResult is one NodeClass's last check.
type launchCheckResult struct {
	key     string
	at      time.Time
	verdict launchVerdict
}

// get is the verdict of the NodeClass's last check, if it had the key and ran less than
// launchCheckTTL before now.
func (l *launchChecks) get(name, key string, now time.Time) (launchVerdict, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.byName[name]
	if !ok || r.key != key || now.Sub(r.at) >= launchCheckTTL {
		return launchVerdict{}, false
	}
	return r.verdict, true
}

// put records a verdict.
func (l *launchChecks) put(name, key string, now time.Time, v launchVerdict) launchVerdict {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byName == nil {
		l.byName = map[string]launchCheckResult{}
	}
	l.byName[name] = launchCheckResult{key: key, at: now, verdict: v}
	return v
}

// forget drops a deleted NodeClass's check.
func (l *launchChecks) forget(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.byName, name)
}

// checkLaunch checks that the controller may launch the NodeClass's nodes, as the AWS provider
// v1.15.2's validation reconciler does (pkg/controllers/nodeclass/validation.go), after the
// NodeClass's other checks pass:
//
//  1. its images, instance profile, security groups and subnets must be resolved, else
//     DependenciesNotReady (False when one failed, Unknown while one is not known);
//  2. a check of the same inputs (the resolved status, spec, annotations and tags) less than
//     launchCheckTTL old stands, passed or failed;
//  3. with DISABLE_DRY_RUN (Options.DisableDryRun) it passes without a call;
//  4. otherwise it creates the launch template of one instance type (launchCheckType) for an
//     on-demand node of no NodePool, as a launch would (CreateLaunchTemplate, for real, as
//     v1.15.2), then dry-runs a one-instance CreateFleet over every subnet and a RunInstances
//     from that template in each subnet until one passes, all tagged as launches are.
//
// EC2's UnauthorizedOperation fails the check with the action's reason
// (CreateLaunchTemplateAuthCheckFailed, CreateFleetAuthCheckFailed, RunInstancesAuthCheckFailed)
// and a message naming the action and why (launchCheckReason); user data over EC2's limit fails
// it as UserDataSizeLimitExceeded. These verdicts are remembered like a pass. A missing
// spec.instanceProfile fails it (InstanceProfileNotFound) without being remembered, and one the
// provider made for the role is taken as not visible yet; throttling and other errors leave the
// condition as it is, to be checked again.
func (p *Provider) checkLaunch(ctx context.Context, nc *awsv1.EC2NodeClass) launchVerdict {
	if v, ok := dependenciesVerdict(nc); !ok {
		return v
	}
	tags := p.instanceTags(nc, "")
	key, err := launchCheckKey(nc, tags)
	if err != nil {
		return retryVerdict("keying the launch check: %s", err)
	}
	now := p.opts.Clock.Now()
	if v, ok := p.launchChecks.get(nc.Name, key, now); ok {
		return v
	}
	if p.opts.DisableDryRun {
		return p.launchChecks.put(nc.Name, key, now, launchCheckPassed)
	}
	failed := func(reason string, err error) launchVerdict {
		log.FromContext(ctx).Error(err, "launch check failed", "ec2nodeclass", nc.Name, "reason", reason)
		v := launchVerdict{status: metav1.ConditionFalse, reason: reason, message: launchCheckMessages[reason] + ": " + launchCheckReason(err)}
		return p.launchChecks.put(nc.Name, key, now, v)
	}

	template, instanceType, err := p.launchCheckTemplate(ctx, nc)
	switch {
	case err == nil:
	case errorCode(err) == "UnauthorizedOperation":
		return failed(ReasonCreateLaunchTemplateAuthCheckFailed, err)
	case isUserDataTooLarge(err):
		return failed(ReasonUserDataSizeLimitExceeded, err)
	default:
		return retryVerdict("checking ec2:CreateLaunchTemplate: %s", err)
	}

	noRetry := func(o *ec2.Options) { o.Retryer = aws.NopRetryer{} } // as v1.15.2: no retries of a throttled check
	if _, err := p.clients.EC2.CreateFleet(ctx, launchCheckFleet(nc, template, instanceType, tags), noRetry); !isDryRunOperation(err) {
		if errorCode(err) == "UnauthorizedOperation" {
			return failed(ReasonCreateFleetAuthCheckFailed, err)
		}
		return retryVerdict("checking ec2:CreateFleet: %v", err)
	}

	// The first subnet's error decides: a refusal is not subnet-specific, and a transient
	// failure in one subnet is passed over when another succeeds.
	var firstErr error
	for i, s := range nc.Status.Subnets {
		_, err := p.clients.EC2.RunInstances(ctx, launchCheckRun(nc, template, instanceType, s.ID, tags), noRetry)
		if isDryRunOperation(err) {
			return p.launchChecks.put(nc.Name, key, now, launchCheckPassed)
		}
		if i == 0 {
			firstErr = err
		}
	}
	switch {
	case isInstanceProfileNotFound(firstErr) && nc.Spec.InstanceProfile != nil:
		// Not remembered: the profile may be being created.
		return launchVerdict{status: metav1.ConditionFalse, reason: ReasonInstanceProfileNotFound,
			message: fmt.Sprintf("Instance profile %q not found", aws.ToString(nc.Spec.InstanceProfile))}
	case isInstanceProfileNotFound(firstErr):
		return retryVerdict("the instance profile %q made for the role is not visible to EC2 yet", nc.Status.InstanceProfile)
	case errorCode(firstErr) == "UnauthorizedOperation":
		return failed(ReasonRunInstancesAuthCheckFailed, firstErr)
	}
	return retryVerdict("checking ec2:RunInstances: %v", firstErr)
}

// dependenciesVerdict is DependenciesNotReady when one of the parts a launch needs is not
// resolved, and ok otherwise.
func dependenciesVerdict(nc *awsv1.EC2NodeClass) (launchVerdict, bool) {
	const msg = "Awaiting AMI, Instance Profile, Security Group, and Subnet resolution"
	unknown := false
	for _, t := range []string{awsv1.ConditionTypeAMIsReady, awsv1.ConditionTypeInstanceProfileReady, awsv1.ConditionTypeSecurityGroupsReady, awsv1.ConditionTypeSubnetsReady} {
		c := meta.FindStatusCondition(nc.Status.Conditions, t)
		switch {
		case c != nil && c.Status == metav1.ConditionFalse:
			return launchVerdict{status: metav1.ConditionFalse, reason: ReasonDependenciesNotReady, message: msg}, false
		case c == nil || c.Status != metav1.ConditionTrue:
			unknown = true
		}
	}
	if unknown {
		return launchVerdict{status: metav1.ConditionUnknown, reason: ReasonDependenciesNotReady, message: msg}, false
	}
	return launchVerdict{}, true
}

// launchCheckKey keys a check by what it depends on, as v1.15.2's cache key: the resolved
// subnets, security groups, images and instance profile, the spec, the annotations and the
// tags. Lists are sorted, so that a new order (subnets by free addresses) is no new input.
func launchCheckKey(nc *awsv1.EC2NodeClass, tags map[string]string) (string, error) {
	subnets := slices.Clone(nc.Status.Subnets)
	slices.SortFunc(subnets, func(a, b awsv1.Subnet) int { return strings.Compare(a.ID, b.ID) })
	groups := slices.Clone(nc.Status.SecurityGroups)
	slices.SortFunc(groups, func(a, b awsv1.SecurityGroup) int { return strings.Compare(a.ID, b.ID) })
	amis := slices.Clone(nc.Status.AMIs)
	slices.SortFunc(amis, func(a, b awsv1.AMI) int { return strings.Compare(a.ID, b.ID) })
	b, err := json.Marshal(struct {
		Subnets         []awsv1.Subnet
		SecurityGroups  []awsv1.SecurityGroup
		AMIs            []awsv1.AMI
		InstanceProfile string
		Spec            awsv1.EC2NodeClassSpec
		Annotations     map[string]string
		Tags            map[string]string
	}{subnets, groups, amis, nc.Status.InstanceProfile, nc.Spec, nc.Annotations, tags})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// launchCheckTemplate creates (or finds) the launch template the check launches from: the
// NodeClass's template for an on-demand node of no NodePool, of the instance type
// launchCheckType picks, with the tenancy its NodePools ask for, as v1.15.2's
// validateCreateLaunchTemplateAuthorization makes it through its launch template provider.
func (p *Provider) launchCheckTemplate(ctx context.Context, nc *awsv1.EC2NodeClass) (template, instanceType string, err error) {
	pools, err := p.nodeClassPools(ctx, nc)
	if err != nil {
		return "", "", err
	}
	its, err := p.instanceTypes(ctx, nc)
	if err != nil {
		return "", "", err
	}
	it := launchCheckType(nc, its, pools)
	if it == nil {
		return "", "", fmt.Errorf("no instance type of ec2nodeclass %s has an image to check a launch with", nc.Name)
	}
	family := cloudprovider.OptionsFromNodeClass(nc).AMIFamily
	if family == "" {
		family = awsv1.AMIFamilyAL2023
	}
	kubelet, err := p.resolvedKubelet(nc, it.Name)
	if err != nil {
		return "", "", err
	}
	params := launchParams{labels: bootstrapLabels(nil, ""), taints: registrationTaints(&karpv1.NodeClaim{}), capacityType: karpv1.CapacityTypeOnDemand,
		tenancy: launchCheckTenancy(pools)}
	if pg, _ := p.placementGroup(ctx, nc); pg != nil {
		params.placementGroupID = pg.ID
	}
	s, err := p.launchTemplates.settings(ctx, nc, kubelet, family, imageFor(nc, it.Labels), it.Capacity.Pods().Value(), params)
	if err != nil {
		return "", "", err
	}
	if p.opts.ReservedCapacity {
		s.CapacityReservationPreference = string(ec2types.CapacityReservationPreferenceNone)
	}
	name, err := p.launchTemplates.ensure(ctx, s)
	return name, it.Name, err
}

// nodeClassPools are the NodePools whose nodes the NodeClass launches.
func (p *Provider) nodeClassPools(ctx context.Context, nc *awsv1.EC2NodeClass) ([]karpv1.NodePool, error) {
	list := &karpv1.NodePoolList{}
	if err := p.opts.KubeClient.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing nodepools: %w", err)
	}
	var out []karpv1.NodePool
	for _, np := range list.Items {
		ref := np.Spec.Template.Spec.NodeClassRef
		if ref != nil && ref.Name == nc.Name && (ref.Kind == "" || ref.Kind == "EC2NodeClass") && (ref.Group == "" || ref.Group == awsv1.Group) {
			out = append(out, np)
		}
	}
	return out, nil
}

// launchCheckType is the instance type a launch is checked with, as v1.15.2's
// getPrioritizedInstanceTypes picks it: one the NodeClass's NodePools allow (their requirements
// and template labels, cheapest first, where v1.15.2 takes its list's order), else, and always
// for the Windows families (whose compatible types v1.15.2 does not trust for the check), the
// first of m5.large and m6g.large the NodeClass offers, else any; of those, one with an image,
// preferring a type with neither GPUs nor accelerators (the standard image, smaller than the
// accelerated ones a NodeClass's block devices may not fit). Nil when none has an image.
func launchCheckType(nc *awsv1.EC2NodeClass, its []*cloudprovider.InstanceType, pools []karpv1.NodePool) *cloudprovider.InstanceType {
	var compatible []*cloudprovider.InstanceType
	seen := map[string]bool{}
	for _, np := range pools {
		reqs, err := scheduling.FromNodePoolRequirements(np.Spec.Template.Spec.Requirements...)
		if err != nil {
			continue
		}
		reqs = reqs.Intersect(scheduling.FromLabels(np.Spec.Template.Labels))
		for _, c := range cloudprovider.LaunchCandidates(its, nil, cloudprovider.LaunchRequest{Requirements: reqs}) {
			if !seen[c.InstanceType.Name] {
				seen[c.InstanceType.Name] = true
				compatible = append(compatible, c.InstanceType)
			}
		}
	}
	if len(compatible) == 0 || slices.Contains(windowsFamilies, cloudprovider.OptionsFromNodeClass(nc).AMIFamily) {
		compatible = nil
		for _, name := range fallbackCheckTypes {
			if i := slices.IndexFunc(its, func(it *cloudprovider.InstanceType) bool { return it.Name == name }); i >= 0 {
				compatible = append(compatible, its[i])
			}
		}
		if len(compatible) == 0 {
			compatible = its
		}
	}
	var accelerated *cloudprovider.InstanceType
	for _, it := range compatible {
		if imageFor(nc, it.Labels) == "" {
			continue
		}
		_, gpus := it.Labels[awsv1.LabelInstanceGPUCount]
		_, accelerators := it.Labels[awsv1.LabelInstanceAcceleratorCount]
		if !gpus && !accelerators {
			return it
		}
		if accelerated == nil {
			accelerated = it
		}
	}
	return accelerated
}

// launchCheckTenancy is dedicated when a NodePool of the NodeClass allows dedicated tenancy,
// as v1.15.2's getTenancyType, else default (empty).
func launchCheckTenancy(pools []karpv1.NodePool) string {
	for _, np := range pools {
		reqs, err := scheduling.FromNodePoolRequirements(np.Spec.Template.Spec.Requirements...)
		if err != nil {
			continue
		}
		if r, ok := reqs.Get(awsv1.LabelInstanceTenancy); ok && r.Has(awsv1.TenancyDedicated) {
			return awsv1.TenancyDedicated
		}
	}
	return ""
}

// launchCheckFleet is the dry-run CreateFleet of the check: one on-demand instance from the
// template, of the instance type in every subnet, tagged as a launch's fleet, instance and
// volumes are (v1.15.2's validateCreateFleetAuthorization).
func launchCheckFleet(nc *awsv1.EC2NodeClass, template, instanceType string, tags map[string]string) *ec2.CreateFleetInput {
	var overrides []ec2types.FleetLaunchTemplateOverridesRequest
	for _, s := range nc.Status.Subnets {
		overrides = append(overrides, ec2types.FleetLaunchTemplateOverridesRequest{InstanceType: ec2types.InstanceType(instanceType), SubnetId: aws.String(s.ID)})
	}
	in := &ec2.CreateFleetInput{
		DryRun: aws.Bool(true),
		Type:   ec2types.FleetTypeInstant,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand,
		},
		OnDemandOptions: &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice},
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(template), Version: aws.String("$Latest")},
			Overrides:                   overrides,
		}},
	}
	for _, rt := range []ec2types.ResourceType{ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume, ec2types.ResourceTypeFleet} {
		in.TagSpecifications = append(in.TagSpecifications, ec2types.TagSpecification{ResourceType: rt, Tags: ec2Tags(tags)})
	}
	return in
}

// launchCheckRun is the dry-run RunInstances of the check in one subnet: one instance from the
// template, its primary interface (or the NodeClass's networkInterfaces) in the subnet, tagged
// as a launch's instance, volumes and interfaces are (v1.15.2's getRunInstancesInput).
func launchCheckRun(nc *awsv1.EC2NodeClass, template, instanceType, subnet string, tags map[string]string) *ec2.RunInstancesInput {
	in := &ec2.RunInstancesInput{
		DryRun:   aws.Bool(true),
		MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
		LaunchTemplate: &ec2types.LaunchTemplateSpecification{LaunchTemplateName: aws.String(template), Version: aws.String("$Latest")},
		InstanceType:   ec2types.InstanceType(instanceType),
	}
	if len(nc.Spec.NetworkInterfaces) == 0 {
		in.NetworkInterfaces = []ec2types.InstanceNetworkInterfaceSpecification{{DeviceIndex: aws.Int32(0), SubnetId: aws.String(subnet)}}
	}
	for _, ni := range nc.Spec.NetworkInterfaces {
		in.NetworkInterfaces = append(in.NetworkInterfaces, ec2types.InstanceNetworkInterfaceSpecification{
			NetworkCardIndex: aws.Int32(ni.NetworkCardIndex), DeviceIndex: aws.Int32(ni.DeviceIndex),
			InterfaceType: aws.String(string(ni.InterfaceType)), SubnetId: aws.String(subnet),
		})
	}
	for _, rt := range []ec2types.ResourceType{ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume, ec2types.ResourceTypeNetworkInterface} {
		in.TagSpecifications = append(in.TagSpecifications, ec2types.TagSpecification{ResourceType: rt, Tags: ec2Tags(tags)})
	}
	return in
}

// isDryRunOperation says EC2 would have done a dry-run request.
func isDryRunOperation(err error) bool { return errorCode(err) == "DryRunOperation" }

// isInstanceProfileNotFound says EC2 refused a launch for an instance profile it does not know.
func isInstanceProfileNotFound(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "InvalidParameterValue" && strings.Contains(ae.ErrorMessage(), "Invalid IAM Instance Profile name")
}

// isUserDataTooLarge says EC2 refused a launch template's user data as over its size limit
// (and not as malformed base64, which shares the code).
func isUserDataTooLarge(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "InvalidUserData.Malformed" && strings.Contains(ae.ErrorMessage(), "User data is limited to")
}

// launchCheckReason words why EC2 refused a check, as v1.15.2's ToReasonMessage does for the
// errors the check reports: which policy refused a call, or that the user data is too large.
func launchCheckReason(err error) string {
	text := err.Error()
	switch {
	case strings.Contains(text, "with an explicit deny in a permissions boundary"):
		return "User is not authorized to perform this operation due to a permission boundary"
	case strings.Contains(text, "with an explicit deny in a service control policy"):
		return "User is not authorized to perform this operation due to a service control policy"
	case strings.Contains(text, "Not authorized for images"):
		return "User is not authorized for AMI used in instance launch"
	case refused(text):
		return "User is not authorized to perform this operation because no identity-based policy allows it"
	case strings.Contains(text, "User data is limited to"):
		return "Rendered user data exceeds the EC2 user data size limit"
	}
	return text
}
