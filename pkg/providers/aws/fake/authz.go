package fake

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// Authorization is one permission check AWS makes for a request: an action on a resource and
// the condition keys IAM evaluates with it. The fake records the checks the real services make
// for each request it serves (after the Service Authorization Reference: CreateFleet checks the
// fleet, its launch templates and images, subnets and security groups, then launches through
// ec2:RunInstances on every resource it creates, tags each through ec2:CreateTags with
// ec2:CreateAction, and passes the instance profile's role), so a test can evaluate an IAM
// policy's actions, resources and tag conditions against exactly what the code did.
type Authorization struct {
	// Action is the IAM action, such as ec2:RunInstances.
	Action string
	// Resource is the resource's ARN, or * for actions that take no resource.
	Resource string
	// RequestTags are the tags the request puts on the resource (aws:RequestTag/KEY).
	RequestTags map[string]string
	// ResourceTags are the tags the resource has before the request (aws:ResourceTag/KEY).
	ResourceTags map[string]string
	// Context are the other condition keys: aws:RequestedRegion always, aws:TagKeys when the
	// request tags, ec2:CreateAction when it tags a resource it creates, ec2:InstanceType for
	// an instance it launches, iam:PassedToService when it passes a role.
	Context map[string][]string
}

// Authorizations returns the permission checks of every request served so far, in order.
func (a *AWS) Authorizations() []Authorization {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Authorization, len(a.authorizations))
	for i, az := range a.authorizations {
		out[i] = Authorization{Action: az.Action, Resource: az.Resource, RequestTags: maps.Clone(az.RequestTags),
			ResourceTags: maps.Clone(az.ResourceTags), Context: maps.Clone(az.Context)}
	}
	return out
}

// authorizeLocked records a permission check of request r; context is pairs of condition key
// and value. The caller holds a.mu.
func (a *AWS) authorizeLocked(r *http.Request, action, resource string, requestTags, resourceTags map[string]string, context ...string) {
	az := Authorization{Action: action, Resource: resource, RequestTags: maps.Clone(requestTags), ResourceTags: maps.Clone(resourceTags),
		Context: map[string][]string{"aws:RequestedRegion": {requestedRegion(r, a.opts.Region)}}}
	if len(requestTags) > 0 {
		az.Context["aws:TagKeys"] = slices.Sorted(maps.Keys(requestTags))
	}
	for i := 0; i+1 < len(context); i += 2 {
		az.Context[context[i]] = append(az.Context[context[i]], context[i+1])
	}
	a.authorizations = append(a.authorizations, az)
}

// authorize is authorizeLocked for callers that do not hold a.mu.
func (a *AWS) authorize(r *http.Request, action, resource string, requestTags, resourceTags map[string]string, context ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.authorizeLocked(r, action, resource, requestTags, resourceTags, context...)
}

// DenyEC2 makes every later call of the EC2 action (such as "DescribeInstanceStatus") fail
// with UnauthorizedOperation (HTTP 403), as EC2 answers a caller whose IAM policy does not
// allow it; the call is still counted and its permission check recorded. AllowEC2 undoes it.
func (a *AWS) DenyEC2(action string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.denied == nil {
		a.denied = map[string]bool{}
	}
	a.denied[action] = true
}

// AllowEC2 undoes DenyEC2 for the action.
func (a *AWS) AllowEC2(action string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.denied, action)
}

// deniedEC2 is the error of a call of a denied EC2 action, nil for an allowed one. A launch
// action's error (RunInstances, CreateFleet, CreateLaunchTemplate) ends with an encoded
// authorization failure message, as EC2's does (see encodedAuthorizationMessage).
func (a *AWS) deniedEC2(action string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.denied[action] {
		return nil
	}
	principal := fmt.Sprintf("arn:aws:sts::%s:assumed-role/KarpenterController/fake", a.opts.AccountID)
	msg := fmt.Sprintf("You are not authorized to perform this operation. User: %s is not authorized to perform: ec2:%s because no identity-based policy allows the ec2:%s action",
		principal, action, action)
	if encodedActions[action] {
		msg += ". Encoded authorization failure message: " + encodedAuthorizationMessage(principal, "ec2:"+action)
	}
	return errf(http.StatusForbidden, "UnauthorizedOperation", "%s", msg)
}

// encodedActions are the EC2 actions whose UnauthorizedOperation carries an encoded
// authorization failure message: those that create resources under resource-level
// permissions, the launch and its launch template among them.
var encodedActions = map[string]bool{"RunInstances": true, "CreateFleet": true, "CreateLaunchTemplate": true}

// encodedAuthorizationMessage stands in for the opaque blob EC2 appends to a refusal, which
// sts:DecodeAuthorizationMessage turns into a JSON document saying what was denied. The fake
// has no STS: its blob is that document itself, base64-encoded (DecodeAuthorizationMessage
// reads it back).
func encodedAuthorizationMessage(principal, action string) string {
	doc := map[string]any{
		"allowed": false, "explicitDeny": false,
		"matchedStatements": map[string]any{"items": []any{}},
		"failures":          map[string]any{"items": []any{}},
		"context": map[string]any{
			"principal": map[string]string{"arn": principal},
			"action":    action, "resource": "*",
			"conditions": map[string]any{"items": []any{}},
		},
	}
	b, _ := json.Marshal(doc)
	return base64.StdEncoding.EncodeToString(b)
}

// DecodeAuthorizationMessage is the fake's sts:DecodeAuthorizationMessage: the JSON document
// of an encoded authorization failure message the fake wrote.
func DecodeAuthorizationMessage(encoded string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return "", fmt.Errorf("decoding authorization message: %w", err)
	}
	return string(b), nil
}

// dryRunOperation is EC2's answer to an allowed request with DryRun set: HTTP 412 and
// DryRunOperation, with nothing done.
func dryRunOperation() error {
	return errf(http.StatusPreconditionFailed, "DryRunOperation", "Request would have succeeded, but DryRun flag is set.")
}

// dryRun reads a request's DryRun parameter.
func (q *queryCall) dryRun() (bool, error) {
	v, err := q.bool("DryRun")
	return v != nil && *v, err
}

// requestedRegion is the region a request was signed for (its SigV4 credential scope,
// AKID/date/REGION/service/aws4_request), else the fake's.
func requestedRegion(r *http.Request, fallback string) string {
	if r == nil {
		return fallback
	}
	_, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential=")
	if !ok {
		return fallback
	}
	cred, _, _ = strings.Cut(cred, ",")
	if parts := strings.Split(cred, "/"); len(parts) == 5 && parts[2] != "" {
		return parts[2]
	}
	return fallback
}

// ec2ARN is the ARN of an EC2 resource of the account: instance, volume, network-interface,
// fleet, launch-template, spot-instances-request, subnet, security-group.
func (a *AWS) ec2ARN(kind, id string) string {
	return fmt.Sprintf("arn:aws:ec2:%s:%s:%s/%s", a.opts.Region, a.opts.AccountID, kind, id)
}

// imageARN is the ARN of an AMI (images have no account in their ARN).
func (a *AWS) imageARN(id string) string {
	return fmt.Sprintf("arn:aws:ec2:%s::image/%s", a.opts.Region, id)
}

// iamARN is the ARN of an IAM resource of the account: kind is role or instance-profile,
// pathName the path and name (/name for path /).
func (a *AWS) iamARN(kind, pathName string) string {
	return fmt.Sprintf("arn:aws:iam::%s:%s%s", a.opts.AccountID, kind, pathName)
}

// ssmParameterARN is the ARN of a parameter: AWS's public parameters (/aws/service/…) have
// no account in theirs.
func (a *AWS) ssmParameterARN(name string) string {
	if !strings.HasPrefix(name, "/") {
		name = "/" + name
	}
	if strings.HasPrefix(name, "/aws/service/") {
		return fmt.Sprintf("arn:aws:ssm:%s::parameter%s", a.opts.Region, name)
	}
	return fmt.Sprintf("arn:aws:ssm:%s:%s:parameter%s", a.opts.Region, a.opts.AccountID, name)
}

// ec2KindOfID is the ARN resource type of an EC2 ID by its prefix.
func ec2KindOfID(id string) string {
	prefix, _, _ := strings.Cut(id, "-")
	switch prefix {
	case "i":
		return "instance"
	case "lt":
		return "launch-template"
	case "subnet":
		return "subnet"
	case "sg":
		return "security-group"
	case "ami":
		return "image"
	}
	return prefix
}

// authorizeLaunchLocked records the checks of launching inst from candidate c, by the
// request's action (createAction: CreateFleet or RunInstances) and its tag specifications:
// ec2:RunInstances on the instance and every resource created with it (its volumes, network
// interfaces and, for spot, its spot request) with the tags each gets, and on the resources it
// uses (image, subnet, security groups, launch template); ec2:CreateTags for each resource
// tagged at creation, with ec2:CreateAction; iam:PassRole for the instance profile's role. The
// instance's check has the ec2:InstanceType condition key. A
// dry run's resources are not created: their ARNs end in /*, as IAM sees them then.
func (a *AWS) authorizeLaunchLocked(r *http.Request, createAction string, specs []TagSpecification, c *candidate, inst *Instance, dryRun bool) {
	run := "ec2:RunInstances"
	newID := func(prefix string) string {
		if dryRun {
			return "*"
		}
		return a.hexIDLocked(prefix, 17)
	}
	tagged := func(kind, id string, tags map[string]string, context ...string) {
		a.authorizeLocked(r, run, a.ec2ARN(kind, id), tags, nil, context...)
		if len(tags) > 0 {
			a.authorizeLocked(r, "ec2:CreateTags", a.ec2ARN(kind, id), tags, nil, "ec2:CreateAction", createAction)
		}
	}
	specTags := func(resourceType string) map[string]string {
		out := map[string]string{}
		for _, s := range c.lt.TagSpecifications {
			if s.ResourceType == resourceType {
				maps.Copy(out, s.Tags)
			}
		}
		for _, s := range specs {
			if s.ResourceType == resourceType {
				maps.Copy(out, s.Tags)
			}
		}
		return out
	}
	tagged("instance", inst.ID, inst.Tags, "ec2:InstanceType", inst.Type)
	volumes := 0
	for _, b := range c.lt.BlockDeviceMappings {
		if b.EBS != nil {
			volumes++
		}
	}
	for range max(volumes, 1) { // at least the image's root volume
		tagged("volume", newID("vol-"), specTags("volume"))
	}
	for range max(len(c.lt.NetworkInterfaces), 1) {
		tagged("network-interface", newID("eni-"), specTags("network-interface"))
	}
	if inst.SpotInstanceRequestID != "" {
		tagged("spot-instances-request", inst.SpotInstanceRequestID, specTags("spot-instances-request"))
	}
	a.authorizeLocked(r, run, a.imageARN(inst.ImageID), nil, nil)
	a.authorizeLocked(r, run, a.ec2ARN("subnet", inst.SubnetID), nil, nil)
	if inst.CapacityReservationID != "" {
		a.authorizeLocked(r, run, a.ec2ARN("capacity-reservation", inst.CapacityReservationID), nil, nil)
	}
	if inst.PlacementGroupName != "" {
		a.authorizeLocked(r, run, a.ec2ARN("placement-group", inst.PlacementGroupName), nil, nil)
	}
	for _, g := range inst.SecurityGroupIDs {
		a.authorizeLocked(r, run, a.ec2ARN("security-group", g), nil, nil)
	}
	a.authorizeLocked(r, run, a.ec2ARN("launch-template", c.lt.ID), nil, c.lt.Tags)
	if p := a.profileByRef(c.lt.InstanceProfile); p != nil {
		for _, role := range p.Roles {
			a.authorizeLocked(r, "iam:PassRole", role.Arn, nil, nil, "iam:PassedToService", "ec2.amazonaws.com")
		}
	}
}
