// Package view is `karpenter view`: a live terminal picture of a cluster's nodes — what each
// costs, how full its CPU and memory requests are, how many pods it runs and what state it is
// in — with the cluster's totals, the NodeClaims still launching and the pods still pending.
//
// The data flows in three steps, each usable alone:
//
//	Source.Read   → Objects   the cluster's Nodes, NodeClaims and Pods (a client or informers)
//	NewSnapshot   → Snapshot  one row per node and per NodeClaim without a node, plus a summary;
//	                          pure: the clock and the prices are given, nothing is read
//	Render        → text      the header and the table, with bars and optional ANSI colours
//
// Watch repeats the three on a ticker and redraws the terminal in place until its context ends.
//
// Prices come from a Prices (the embedded EC2 catalog's on-demand prices and modelled spot
// prices, catalog.DefaultPrices, in practice), looked up by the instance type, zone and capacity
// type labels Karpenter puts on nodes and NodeClaims. Requests are the effective pod requests of
// pkg/scheduling, as the kube-scheduler counts them.
package view
