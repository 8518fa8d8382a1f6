// Package aws is the AWS cloud provider: it resolves EC2NodeClasses (subnets, security
// groups, images, instance profiles) into their status, lists instance types and their prices
// from the EC2 and Pricing APIs (with the shipped catalog as the offline fallback), launches
// NodeClaims with instant EC2 Fleets from a launch template per NodeClass configuration, finds
// and terminates instances by their tags, collects orphaned instances and unused launch
// templates, and acts on the SQS interruption queue and on the instances that EC2's status
// checks find broken or that have scheduled events (DescribeInstanceStatus). Like Karpenter it
// batches its per-instance EC2 calls: launches of the same shape that arrive together share one
// fleet, and reads and terminations of single instances share one call (ec2Batchers).
//
// It talks to AWS only through the aws-sdk-go-v2 clients in Clients, so tests point the real
// clients at the in-process far end in package fake. Every AWS API it calls is listed in the
// IAM policy docs/iam-policy.json, which a test keeps in step with the code.
package aws
