package aws

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	"github.com/openkarpenter/karpenter/pkg/metrics"
)

// launchFailureRule names the launch failures whose "code: message" text it matches.
type launchFailureRule struct {
	reason  string
	matches func(text string) bool
}

// containsAny matches a text holding any of the marks.
func containsAny(marks ...string) func(string) bool {
	return func(text string) bool {
		for _, m := range marks {
			if strings.Contains(text, m) {
				return true
			}
		}
		return false
	}
}

// both matches a text that a and b both match.
func both(a, b func(string) bool) func(string) bool {
	return func(text string) bool { return a(text) && b(text) }
}

// refused matches the errors of a request refused for want of permission.
var refused = containsAny("UnauthorizedOperation", "AccessDenied", "AuthFailure")

// launchFailureRules classify EC2 launch errors into the reasons Karpenter's AWS provider
// reports them with, in its order of precedence: the first rule that matches wins, and
// capacity and quota errors come last so that a more specific cause is named first.
var launchFailureRules = []launchFailureRule{
	{"SpotSLRCreationFailed", containsAny(spotRoleMissingCode)},
	// An explicit deny is a refusal whatever it concerns, images included.
	{"Unauthorized", both(refused, containsAny("with an explicit deny in a permissions boundary", "with an explicit deny in a service control policy"))},
	{"AMIAuthorizationFailure", both(refused, containsAny("Not authorized for images"))},
	{"Unauthorized", refused},
	{"SecurityGroupSubnetVPCMismatch", both(containsAny("InvalidParameter"), containsAny("belong to different networks"))},
	{"InstanceProfileNameInvalid", containsAny("iamInstanceProfile.name is invalid")},
	{"LaunchTemplateNotFound", containsAny("InvalidLaunchTemplateId.NotFound")},
	{"UserDataSizeLimitExceeded", containsAny("User data is limited to")},
	{"InvalidAMIID", containsAny("InvalidAMIID.Malformed")},
	{"AMINotFound", containsAny("InvalidAMIID.NotFound")},
	{"RequestLimitExceeded", containsAny("RequestLimitExceeded")},
	{"InternalError", containsAny("InternalError")},
	{"FreeTierIneligible", containsAny("not eligible for Free Tier")},
	{"FleetQuotaExceeded", containsAny("MaxFleetCountExceeded")},
	{"AccountPendingVerification", containsAny("PendingVerification")},
	{"SpotQuotaExceeded", containsAny("MaxSpotInstanceCountExceeded")},
	{"VCPULimitExceeded", containsAny("VcpuLimitExceeded")},
	{subnetFullCode, containsAny(subnetFullCode)},
}

// launchFailureReason is the reason label of karpenter_cloudprovider_instance_launch_failures_total
// for a fleet error: Karpenter's classification of its code and message, ReasonLaunchFailed
// for anything it does not name (capacity shortages among them).
func launchFailureReason(code, message string) string {
	text := code + ": " + message
	for _, r := range launchFailureRules {
		if r.matches(text) {
			return r.reason
		}
	}
	return ReasonLaunchFailed
}

// recordLaunchFailures counts each offering a fleet of the capacity type reported failing, by
// its zone (and the zone's ID, from the NodeClass's subnets) and reason.
func recordLaunchFailures(nc *awsv1.EC2NodeClass, capacityType string, errs []ec2types.CreateFleetError) {
	for _, e := range errs {
		var zone string
		if o := e.LaunchTemplateAndOverrides; o != nil && o.Overrides != nil {
			zone = aws.ToString(o.Overrides.AvailabilityZone)
		}
		metrics.InstanceLaunchFailed(zone, zoneIDOf(nc, zone), capacityType, launchFailureReason(aws.ToString(e.ErrorCode), aws.ToString(e.ErrorMessage)))
	}
}

// zoneIDOf is the ID of a zone of the NodeClass's subnets; "" when none of them is in it.
func zoneIDOf(nc *awsv1.EC2NodeClass, zone string) string {
	for _, s := range nc.Status.Subnets {
		if s.Zone == zone {
			return s.ZoneID
		}
	}
	return ""
}
