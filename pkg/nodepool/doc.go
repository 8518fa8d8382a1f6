// Package nodepool owns what Karpenter derives from a NodePool: the NodeClaims its template
// stamps out, the hash of the template's static fields (for drift), its readiness, and the
// controllers that keep its status (resources, node count, conditions) and its static replicas.
package nodepool
