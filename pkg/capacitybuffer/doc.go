// Package capacitybuffer keeps the spare capacity CapacityBuffers (autoscaling.x-k8s.io/v1beta1)
// ask for, behind Karpenter's CapacityBuffer feature gate.
//
// A buffer is N chunks of one pod shape. The Controller resolves each buffer: the shape from
// its PodTemplate (podTemplateRef) or its workload's pod template (scalableRef: a Deployment,
// StatefulSet or ReplicaSet), the count from replicas, a percentage of the workload's replicas
// (the larger of the two) and limits (the most chunks whose requests fit them, capping the
// rest); it writes them to the status with the ReadyForProvisioning condition and wakes the
// provisioner.
//
// Buffers.VirtualPods turns the ready buffers into virtual pods: pods that exist only in
// memory, marked by VirtualPodAnnotation, at the lowest priority. The provisioner schedules
// them with the pending pods, after them, so it launches nodes when they fit nowhere, but it
// never nominates, binds or reports them; where they went (Split) sets each buffer's
// Provisioning condition (FitsExistingCapacity or RequiresNewCapacity). Disruption places them
// in every consolidation simulation, so a consolidation that would take the buffer's room needs
// a replacement that holds it, and keeps an empty node they occupy (Karpenter's Unconsolidatable
// event "Node ... has buffer pods"). Real pods are never kept out: the kube-scheduler binds them
// into the room as into any free room, and the next pass places the virtual pods again,
// launching for them if the room is gone.
package capacitybuffer
