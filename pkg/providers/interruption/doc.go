// Package interruption owns what happens when a cloud says an instance is about to go: the
// Handler every provider hands its notices to (the AWS provider's from the SQS queue and
// DescribeInstanceStatus, the simulated cloud's by polling it), the kinds of notice, the Events
// recorded for them and the reason they are counted under in
// karpenter_nodeclaims_disrupted_total. It sits beside the providers, above the cloud model
// (pkg/cloudprovider), whose out-of-capacity cache it feeds.
package interruption
