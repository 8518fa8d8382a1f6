// Package cloudmetrics owns the instrumentation of calls to a cloud: Wrap gives each controller
// its own view of a CloudProvider whose every call is timed in
// karpenter_cloudprovider_duration_seconds and whose errors are counted, by type, in
// karpenter_cloudprovider_errors_total, as Karpenter's cloud provider metrics decorator does.
package cloudmetrics
