// Package scheduling owns the pure vocabulary of placement: label requirements and their
// algebra (In, NotIn, Exists, DoesNotExist, Gt, Lt, the Gte and Lte of NodePools and
// NodeClaims, minValues), the labels Karpenter knows, taints and tolerations, pod resource
// requests computed as Kubernetes does, and host ports.
//
// Everything here is deterministic and free of I/O, so the provisioner, consolidation and the
// simulator build on the same answers. Incompatibilities come back as errors that say which key
// and which values clashed, ready to be shown to users in Events.
package scheduling
