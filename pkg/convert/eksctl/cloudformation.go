package eksctl

import "fmt"

// The policy language and template versions.
const (
	policyVersion   = "2012-10-17"
	templateVersion = "2010-09-09"
)

// controllerActions are what eksctl's controller policy allows on any resource.
var controllerActions = []string{
	"ec2:CreateFleet",
	"ec2:CreateLaunchTemplate",
	"ec2:CreateTags",
	"ec2:DescribeAvailabilityZones",
	"ec2:DescribeInstanceTypeOfferings",
	"ec2:DescribeInstanceTypes",
	"ec2:DescribeInstances",
	"ec2:DescribeLaunchTemplates",
	"ec2:DescribeSecurityGroups",
	"ec2:DescribeSubnets",
	"ec2:DeleteLaunchTemplate",
	"ec2:RunInstances",
	"ec2:TerminateInstances",
	"ec2:DescribeImages",
	"ec2:DescribeSpotPriceHistory",
	"ec2:DescribeCapacityReservations",
	"iam:PassRole",
	"iam:CreateServiceLinkedRole",
	"iam:GetInstanceProfile",
	"iam:CreateInstanceProfile",
	"iam:DeleteInstanceProfile",
	"iam:TagInstanceProfile",
	"iam:AddRoleToInstanceProfile",
	"iam:RemoveRoleFromInstanceProfile",
	"iam:ListInstanceProfiles",
	"iam:ListInstanceProfilesForRole",
	"eks:DescribeCluster",
	"ssm:GetParameter",
	"pricing:GetProducts",
}

// queueActions are what the controller may do on the interruption queue.
var queueActions = []string{"sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage"}

// nodePolicies are the AWS managed policies of the node role.
var nodePolicies = []string{
	"AmazonEKSWorkerNodePolicy",
	"AmazonEKS_CNI_Policy",
	"AmazonEC2ContainerRegistryPullOnly",
	"AmazonSSMManagedInstanceCore",
}

// interruptionRules are the EventBridge rules that feed the interruption queue, by logical
// name: the event source and detail type each forwards.
var interruptionRules = []struct{ name, source, detailType string }{
	{"ScheduledChangeRule", "aws.health", "AWS Health Event"},
	{"SpotInterruptionRule", "aws.ec2", "EC2 Spot Instance Interruption Warning"},
	{"RebalanceRule", "aws.ec2", "EC2 Instance Rebalance Recommendation"},
	{"InstanceStateChangeRule", "aws.ec2", "EC2 Instance State-change Notification"},
}

// Logical names of the template's resources.
const (
	nodeRoleResource        = "KarpenterNodeRole"
	instanceProfileResource = "KarpenterNodeInstanceProfile"
	policyResource          = "KarpenterControllerPolicy"
	queueResource           = "KarpenterInterruptionQueue"
	queuePolicyResource     = "KarpenterInterruptionQueuePolicy"
)

func ref(name string) map[string]any { return map[string]any{"Ref": name} }
func getAtt(name, attribute string) map[string]any {
	return map[string]any{"Fn::GetAtt": []any{name, attribute}}
}
func sub(text string) map[string]any { return map[string]any{"Fn::Sub": text} }

// template is the CloudFormation template of eksctl's Karpenter stack.
func (c *cluster) template() map[string]any {
	managed := make([]any, 0, len(nodePolicies))
	for _, p := range nodePolicies {
		managed = append(managed, sub("arn:${AWS::Partition}:iam::aws:policy/"+p))
	}
	nodeRole := map[string]any{
		"RoleName": c.nodeRoleName(),
		"Path":     "/",
		"AssumeRolePolicyDocument": map[string]any{
			"Version": policyVersion,
			"Statement": []any{map[string]any{
				"Effect":    "Allow",
				"Principal": map[string]any{"Service": []any{sub("ec2.${AWS::URLSuffix}")}},
				"Action":    []any{"sts:AssumeRole"},
			}},
		},
		"ManagedPolicyArns": managed,
	}
	if iam := c.cfg.IAM; iam != nil && iam.ServiceRolePermissionsBoundary != nil && *iam.ServiceRolePermissionsBoundary != "" {
		nodeRole["PermissionsBoundary"] = *iam.ServiceRolePermissionsBoundary
	}
	statements := []any{map[string]any{
		"Effect":   "Allow",
		"Resource": "*",
		"Action":   stringsToAny(controllerActions),
	}}
	if c.queue {
		statements = append(statements, map[string]any{
			"Effect":   "Allow",
			"Resource": getAtt(queueResource, "Arn"),
			"Action":   stringsToAny(queueActions),
		})
	}
	resources := map[string]any{
		nodeRoleResource: map[string]any{"Type": "AWS::IAM::Role", "Properties": nodeRole},
		instanceProfileResource: map[string]any{"Type": "AWS::IAM::InstanceProfile", "Properties": map[string]any{
			"InstanceProfileName": c.instanceProfileName(),
			"Path":                "/",
			"Roles":               []any{ref(nodeRoleResource)},
		}},
		policyResource: map[string]any{"Type": "AWS::IAM::ManagedPolicy", "Properties": map[string]any{
			"ManagedPolicyName": c.policyName(),
			"PolicyDocument":    map[string]any{"Version": policyVersion, "Statement": statements},
		}},
	}
	outputs := map[string]any{
		"KarpenterNodeRoleArn":             map[string]any{"Value": getAtt(nodeRoleResource, "Arn")},
		"KarpenterNodeInstanceProfileName": map[string]any{"Value": ref(instanceProfileResource)},
		"KarpenterControllerPolicyArn":     map[string]any{"Value": ref(policyResource)},
	}
	if c.queue {
		resources[queueResource] = map[string]any{"Type": "AWS::SQS::Queue", "Properties": map[string]any{
			"QueueName":              c.name,
			"MessageRetentionPeriod": 300,
		}}
		resources[queuePolicyResource] = map[string]any{"Type": "AWS::SQS::QueuePolicy", "Properties": map[string]any{
			"Queues": []any{ref(queueResource)},
			"PolicyDocument": map[string]any{
				"Id":      "EC2InterruptionPolicy",
				"Version": policyVersion,
				"Statement": []any{map[string]any{
					"Effect":    "Allow",
					"Principal": map[string]any{"Service": []any{"events.amazonaws.com", "sqs.amazonaws.com"}},
					"Action":    "sqs:SendMessage",
					"Resource":  getAtt(queueResource, "Arn"),
				}},
			},
		}}
		for _, rule := range interruptionRules {
			resources[rule.name] = map[string]any{"Type": "AWS::Events::Rule", "Properties": map[string]any{
				"EventPattern": map[string]any{"source": []any{rule.source}, "detail-type": []any{rule.detailType}},
				"Targets":      []any{map[string]any{"Id": "KarpenterInterruptionQueueTarget", "Arn": getAtt(queueResource, "Arn")}},
			}}
		}
		outputs["KarpenterInterruptionQueueName"] = map[string]any{"Value": getAtt(queueResource, "QueueName")}
	}
	return map[string]any{
		"AWSTemplateFormatVersion": templateVersion,
		"Description":              fmt.Sprintf("Karpenter's AWS resources for EKS cluster %s, as eksctl creates them in stack %s", c.name, c.stackName()),
		"Resources":                resources,
		"Outputs":                  outputs,
	}
}

// templateComment introduces the template.
func (c *cluster) templateComment() string {
	what := "the node role and instance profile, and the controller policy"
	if c.queue {
		what += ", the interruption queue and its four EventBridge rules"
	}
	return fmt.Sprintf("cloudformation.yaml: %s for EKS cluster %s (step 1 in values.yaml).", what, c.name)
}

func stringsToAny(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}
