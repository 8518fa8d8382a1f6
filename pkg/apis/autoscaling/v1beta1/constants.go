package v1beta1

// Well-known values of the CapacityBuffer API, as the Kubernetes autoscalers spell them.
const (
	// ActiveProvisioningStrategy keeps nodes running with room for the buffer's pods; it is
	// the default strategy, and the only one acted on.
	ActiveProvisioningStrategy = "buffer.x-k8s.io/active-capacity"

	// ConditionReadyForProvisioning is True when the buffer's pod shape and count were
	// resolved.
	ConditionReadyForProvisioning = "ReadyForProvisioning"
	// ConditionProvisioning is True when the buffer's pods fit the existing capacity, False
	// when they need new nodes (or the buffer is not ready, or empty).
	ConditionProvisioning = "Provisioning"

	// KindDeployment, KindStatefulSet and KindReplicaSet are the scalableRef kinds resolved
	// (API group apps).
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
	KindReplicaSet  = "ReplicaSet"
)
