// Package packing measures how far a fleet of nodes is from a packing of its pods made from
// scratch. For each NodePool it takes the pods on the NodePool's nodes and asks two questions:
// what would the provisioning scheduler's packing of them onto new nodes cost (Repacked), and
// what is the least any packing could cost (Bound, the LP lower bound of package lowerbound).
// The fleet's packing ratio is its $/hour over the bound: 1 is a fleet as cheap as the pods
// allow, 1.5 one that pays half again as much.
//
// The disruption controller computes it on a period, serves it as the metrics
// karpenter_cluster_packing_ratio and karpenter_cluster_repacked_cost_dollars_per_hour (ours,
// not Karpenter's), and acts on it (re-pack consolidation, see package disruption); `view`
// and `simulate` show it. It is ours: Karpenter has no such measure.
package packing
