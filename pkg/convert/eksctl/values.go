package eksctl

import (
	"fmt"
	"sort"
	"strings"
)

// values are the Helm values for the cluster's Karpenter version: the cluster name, the
// interruption queue (only when eksctl creates one), the service account with its IAM role,
// and for versions before 0.33 the default instance profile; in the settings.aws block
// before 0.32.
func (c *cluster) values() map[string]any {
	settings := map[string]any{}
	if c.version.lessThan(settingsRenamedVersion) {
		aws := map[string]any{
			"clusterName":            c.name,
			"defaultInstanceProfile": c.instanceProfileName(),
		}
		if c.queue {
			aws["interruptionQueueName"] = c.name
		}
		settings["aws"] = aws
	} else {
		settings["clusterName"] = c.name
		if c.queue {
			settings["interruptionQueue"] = c.name
		}
		if c.version.lessThan(awsSettingsRemovedVersion) {
			settings["aws"] = map[string]any{"defaultInstanceProfile": c.instanceProfileName()}
		}
	}
	return map[string]any{
		"settings": settings,
		"serviceAccount": map[string]any{
			"create": isTrue(c.cfg.Karpenter.CreateServiceAccount),
			"name":   serviceAccount,
			"annotations": map[string]any{
				"eks.amazonaws.com/role-arn": c.arn("role", c.controllerRoleName()),
			},
		},
	}
}

// valuesComment explains the values and lists the install steps, in order.
func (c *cluster) valuesComment() string {
	cfg := c.cfg
	region := ""
	if cfg.Metadata.Region != "" {
		region = " --region " + cfg.Metadata.Region
	}
	tags := []string{"alpha.eksctl.io/karpenter-name=" + c.name, "alpha.eksctl.io/karpenter-version=" + cfg.Karpenter.Version}
	for _, k := range sortedKeys(cfg.Metadata.Tags) {
		tags = append(tags, k+"="+cfg.Metadata.Tags[k])
	}
	roleOnly := ""
	if isTrue(cfg.Karpenter.CreateServiceAccount) {
		roleOnly = " --role-only"
	}
	lines := []string{
		fmt.Sprintf("values.yaml: Helm values for Karpenter %s on EKS cluster %s, from its eksctl ClusterConfig.", cfg.Karpenter.Version, c.name),
		"The cluster endpoint is left out: Karpenter looks it up (eks:DescribeCluster).",
		"",
		"What `eksctl create cluster` does for Karpenter, step by step:",
		"1. The IAM resources and the interruption queue (cloudformation.yaml):",
		fmt.Sprintf("   aws cloudformation deploy%s --stack-name %s --template-file cloudformation.yaml \\", region, c.stackName()),
		"     --capabilities CAPABILITY_NAMED_IAM --tags " + strings.Join(tags, " "),
		"2. The controller's IAM role for service accounts, with the controller policy:",
		fmt.Sprintf("   eksctl create iamserviceaccount --cluster %s --namespace %s --name %s \\", c.name, namespace, serviceAccount),
		fmt.Sprintf("     --role-name %s --attach-policy-arn %s%s --approve", c.controllerRoleName(), c.arn("policy", c.policyName()), roleOnly),
		"3. Nodes of the node role may join the cluster:",
		fmt.Sprintf("   eksctl create iamidentitymapping --cluster %s --arn %s \\", c.name, c.arn("role", c.nodeRoleName())),
		"     --username 'system:node:{{EC2PrivateDNSName}}' --group system:bootstrappers --group system:nodes",
	}
	step := 4
	if _, ok := cfg.Metadata.Tags[discoveryTag]; ok {
		lines = append(lines,
			fmt.Sprintf("%d. The cluster security group carries the discovery tag:", step),
			fmt.Sprintf("   aws ec2 create-tags --resources \"$(aws eks describe-cluster --name %s%s --query cluster.resourcesVpcConfig.clusterSecurityGroupId --output text)\" \\", c.name, region),
			fmt.Sprintf("     --tags Key=%s,Value=%s", discoveryTag, c.discoveryValue()),
		)
		step++
	}
	lines = append(lines,
		fmt.Sprintf("%d. Karpenter itself:", step),
		fmt.Sprintf("   helm upgrade --install karpenter %s --version %s --namespace %s --create-namespace -f values.yaml", chart, cfg.Karpenter.Version, namespace),
		fmt.Sprintf("%d. A first NodePool and EC2NodeClass: kubectl apply -f nodepool.yaml", step+1),
	)
	return strings.Join(lines, "\n")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
