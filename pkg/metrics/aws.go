package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Subsystems of the AWS provider's metrics.
const (
	subsystemInterruption   = "interruption"
	subsystemEC2NodeClasses = "ec2nodeclasses"
	subsystemBatcher        = "cloudprovider_batcher"
)

// Label names of the AWS provider's metrics, as Karpenter's AWS provider spells them.
const (
	// LabelMessageType is the kind of an interruption queue message (the MessageType* values).
	LabelMessageType = "message_type"
	// LabelZoneID is the ID of an availability zone, such as usw2-az1; empty when not known.
	LabelZoneID = "zone_id"
	// LabelNodeClass is the name of an EC2NodeClass.
	LabelNodeClass = "nodeclass"
	// LabelCategory is the kind of an unhealthy EC2 instance status (the Category* values).
	LabelCategory = "category"
	// LabelBatcher is the request batcher, named for the EC2 call it merges (the Batcher*
	// values).
	LabelBatcher = "batcher"
)

// Values of LabelMessageType, as Karpenter's AWS provider names the kinds of message.
const (
	// MessageTypeSpotInterrupted: an EC2 Spot Instance Interruption Warning.
	MessageTypeSpotInterrupted = "spot_interrupted"
	// MessageTypeRebalanceRecommendation: an EC2 Instance Rebalance Recommendation.
	MessageTypeRebalanceRecommendation = "rebalance_recommendation"
	// MessageTypeScheduledChange: an AWS Health scheduled change of EC2 instances.
	MessageTypeScheduledChange = "scheduled_change"
	// MessageTypeInstanceStopped: an EC2 Instance State-change Notification to stopping or
	// stopped.
	MessageTypeInstanceStopped = "instance_stopped"
	// MessageTypeInstanceTerminated: an EC2 Instance State-change Notification to
	// shutting-down or terminated.
	MessageTypeInstanceTerminated = "instance_terminated"
	// MessageTypeNoOp: any other message, deleted without action.
	MessageTypeNoOp = "no_op"
	// MessageTypeInstanceStatus: the instance status check failed (DescribeInstanceStatus).
	// Only a reason of karpenter_nodeclaims_disrupted_total: it does not come through the queue.
	MessageTypeInstanceStatus = "instance_status"
	// MessageTypeSystemStatus: the system status check failed (DescribeInstanceStatus).
	MessageTypeSystemStatus = "system_status"
	// MessageTypeEventStatus: a scheduled event of the instance (DescribeInstanceStatus).
	MessageTypeEventStatus = "event_status"
)

// Values of LabelCategory, as Karpenter's AWS provider names the parts of an instance status.
const (
	// CategoryInstanceStatus: the instance status check, of the instance's virtual machine.
	CategoryInstanceStatus = "InstanceStatus"
	// CategorySystemStatus: the system status check, of the host the instance runs on.
	CategorySystemStatus = "SystemStatus"
	// CategoryEventStatus: the instance's scheduled events.
	CategoryEventStatus = "EventStatus"
)

// Values of LabelBatcher, as Karpenter's AWS provider names its batchers.
const (
	// BatcherCreateFleet merges identical CreateFleet requests into one fleet.
	BatcherCreateFleet = "create_fleet"
	// BatcherDescribeInstances merges DescribeInstances requests by instance ID.
	BatcherDescribeInstances = "describe_instances"
	// BatcherTerminateInstances merges TerminateInstances requests.
	BatcherTerminateInstances = "terminate_instances"
)

// The AWS provider's metrics. Read them in tests (prometheus/testutil); update them through
// the recording functions below.
var (
	// InterruptionReceivedMessagesTotal counts the interruption queue messages received and
	// understood, by message type (MessageType*).
	InterruptionReceivedMessagesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemInterruption, Name: "received_messages_total",
		Help: "Messages received from the interruption queue and read, by message type (spot_interrupted, rebalance_recommendation, scheduled_change, instance_stopped, instance_terminated, no_op).",
	}, []string{LabelMessageType})
	// InterruptionDeletedMessagesTotal counts the interruption queue messages deleted from the
	// queue: those acted on, and those that could not be read.
	InterruptionDeletedMessagesTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemInterruption, Name: "deleted_messages_total",
		Help: "Messages deleted from the interruption queue once handled (or found unreadable).",
	})
	// InterruptionMessageQueueDurationSeconds observes, for each interruption message acted
	// on, the time from its arrival on the queue to the end of its handling.
	InterruptionMessageQueueDurationSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: subsystemInterruption, Name: "message_queue_duration_seconds",
		Help:    "Time in seconds from an interruption message's arrival on the queue until Karpenter finished acting on it.",
		Buckets: DurationBuckets(),
	})
	// InterruptionInstanceStatusUnhealthyTotal counts the unhealthy instance statuses found by
	// polling DescribeInstanceStatus, by category (Category*): an instance of the cluster is
	// counted once per category until it is no longer reported unhealthy in that category.
	InterruptionInstanceStatusUnhealthyTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemInterruption, Name: "instance_status_unhealthy_total",
		Help: "Unhealthy EC2 instance statuses found with DescribeInstanceStatus, each instance of the cluster counted once per category (InstanceStatus, SystemStatus, EventStatus) until healthy again.",
	}, []string{LabelCategory})
	// CloudProviderInstanceLaunchFailuresTotal counts the offerings a CreateFleet request
	// reported failing (one fleet can fail several), by zone, zone ID, capacity type and
	// reason.
	CloudProviderInstanceLaunchFailuresTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemCloudProvider, Name: "instance_launch_failures_total",
		Help: "Offerings that a CreateFleet request reported failing to launch (one request can fail several), by availability zone, zone ID, capacity type and reason.",
	}, []string{LabelZone, LabelZoneID, LabelCapacityType, LabelReason})
	// CloudProviderInstanceTerminationFailuresTotal counts the TerminateInstances calls that
	// failed, by the instance's zone and zone ID.
	CloudProviderInstanceTerminationFailuresTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemCloudProvider, Name: "instance_termination_failures_total",
		Help: "TerminateInstances calls that failed, by the instance's availability zone and zone ID.",
	}, []string{LabelZone, LabelZoneID})
	// CloudProviderInstanceTypeCPUCores is the number of vCPUs of each instance type the
	// provider has built offerings from.
	CloudProviderInstanceTypeCPUCores = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: subsystemCloudProvider, Name: "instance_type_cpu_cores",
		Help: "vCPUs of an instance type.",
	}, []string{LabelInstanceType})
	// CloudProviderInstanceTypeMemoryBytes is the memory of each instance type as EC2 reports
	// it, before the VM overhead is taken off.
	CloudProviderInstanceTypeMemoryBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: subsystemCloudProvider, Name: "instance_type_memory_bytes",
		Help: "Memory of an instance type in bytes, as EC2 reports it (before VM overhead).",
	}, []string{LabelInstanceType})
	// EC2NodeClassesUserDataBytes is the size of the user data last rendered for a launch
	// template of each EC2NodeClass, before base64 encoding.
	EC2NodeClassesUserDataBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: subsystemEC2NodeClasses, Name: "userdata_bytes",
		Help: "Size in bytes of the user data last rendered for a launch template of the EC2NodeClass, before base64 encoding.",
	}, []string{LabelNodeClass})

	// CloudProviderBatcherBatchTimeSeconds observes, for each batching window of a request
	// batcher, the time from the window's first request to its close (idle or full).
	CloudProviderBatcherBatchTimeSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: subsystemBatcher, Name: "batch_time_seconds",
		Help:    "Time in seconds each batching window of a request batcher stayed open, from its first request until it closed, by batcher (create_fleet, describe_instances, terminate_instances).",
		Buckets: batchTimeBuckets(),
	}, []string{LabelBatcher})
	// CloudProviderBatcherBatchSize observes the number of requests merged into each EC2 call
	// of a request batcher.
	CloudProviderBatcherBatchSize = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: subsystemBatcher, Name: "batch_size",
		Help:    "Requests merged into one EC2 call by a request batcher, by batcher (create_fleet, describe_instances, terminate_instances).",
		Buckets: batchSizeBuckets(),
	}, []string{LabelBatcher})
)

// batchTimeBuckets are the bounds of CloudProviderBatcherBatchTimeSeconds, Karpenter's duration
// buckets (finer than DurationBuckets below one second, where batching windows close).
func batchTimeBuckets() []float64 {
	return []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
		1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60, 120, 150, 300, 450, 600}
}

// batchSizeBuckets are the bounds of CloudProviderBatcherBatchSize, as Karpenter's.
func batchSizeBuckets() []float64 {
	return []float64{1, 2, 4, 5, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100, 125, 150, 175, 200,
		225, 250, 275, 300, 350, 400, 450, 500, 550, 600, 700, 800, 900, 1000}
}

// awsMetrics are the AWS provider's metrics: interruption messages, unhealthy instance
// statuses, instance launch and termination failures, instance type facts, user data size,
// request batching.
func awsMetrics() []prometheus.Collector {
	return []prometheus.Collector{
		InterruptionReceivedMessagesTotal, InterruptionDeletedMessagesTotal, InterruptionMessageQueueDurationSeconds,
		InterruptionInstanceStatusUnhealthyTotal,
		CloudProviderInstanceLaunchFailuresTotal, CloudProviderInstanceTerminationFailuresTotal,
		CloudProviderInstanceTypeCPUCores, CloudProviderInstanceTypeMemoryBytes, EC2NodeClassesUserDataBytes,
		CloudProviderBatcherBatchTimeSeconds, CloudProviderBatcherBatchSize,
	}
}

// InterruptionMessageReceived records an interruption queue message of the type (a
// MessageType* value) received.
func InterruptionMessageReceived(messageType string) {
	InterruptionReceivedMessagesTotal.WithLabelValues(messageType).Inc()
}

// InterruptionMessageDeleted records an interruption queue message deleted from the queue.
func InterruptionMessageDeleted() { InterruptionDeletedMessagesTotal.Inc() }

// ObserveInterruptionMessageQueueDuration records an interruption message handled d after it
// arrived on the queue.
func ObserveInterruptionMessageQueueDuration(d time.Duration) {
	InterruptionMessageQueueDurationSeconds.Observe(d.Seconds())
}

// InstanceStatusUnhealthy records an instance of the cluster newly found unhealthy in the
// category (a Category* value).
func InstanceStatusUnhealthy(category string) {
	InterruptionInstanceStatusUnhealthyTotal.WithLabelValues(category).Inc()
}

// InstanceLaunchFailed records an offering a fleet failed to launch: in the zone (and zone ID,
// "" when not known), of the capacity type, for the reason.
func InstanceLaunchFailed(zone, zoneID, capacityType, reason string) {
	CloudProviderInstanceLaunchFailuresTotal.WithLabelValues(zone, zoneID, capacityType, reason).Inc()
}

// InstanceTerminationFailed records a failed termination of an instance in the zone (and zone
// ID, "" when not known).
func InstanceTerminationFailed(zone, zoneID string) {
	CloudProviderInstanceTerminationFailuresTotal.WithLabelValues(zone, zoneID).Inc()
}

// SetInstanceTypeSize records an instance type's vCPUs and memory in bytes (before overhead).
func SetInstanceTypeSize(instanceType string, vcpus int, memoryBytes int64) {
	CloudProviderInstanceTypeCPUCores.WithLabelValues(instanceType).Set(float64(vcpus))
	CloudProviderInstanceTypeMemoryBytes.WithLabelValues(instanceType).Set(float64(memoryBytes))
}

// SetNodeClassUserDataBytes records the size of the user data rendered for an EC2NodeClass.
func SetNodeClassUserDataBytes(nodeClass string, n int) {
	EC2NodeClassesUserDataBytes.WithLabelValues(nodeClass).Set(float64(n))
}

// ForgetNodeClassUserData drops the user data size of an EC2NodeClass whose launch templates
// were deleted.
func ForgetNodeClassUserData(nodeClass string) {
	EC2NodeClassesUserDataBytes.DeleteLabelValues(nodeClass)
}

// ObserveBatchWindow records a batching window of the batcher (a Batcher* value) that
// stayed open for d.
func ObserveBatchWindow(batcher string, d time.Duration) {
	CloudProviderBatcherBatchTimeSeconds.WithLabelValues(batcher).Observe(d.Seconds())
}

// ObserveBatchSize records an EC2 call of the batcher (a Batcher* value) that merged n
// requests.
func ObserveBatchSize(batcher string, n int) {
	CloudProviderBatcherBatchSize.WithLabelValues(batcher).Observe(float64(n))
}
