// Package view is `karpenter view`: a live terminal picture of a cluster's nodes — what each
// costs, how full its requests of CPU, memory or any other resource are, how many pods it runs
// out of how many it may, what state it is in and the labels asked for — with the cluster's
// totals, the NodeClaims still launching and the pods still pending. It takes eks-node-viewer's
// resources, extra labels (computed ones included: NodeAgeLabel, UsageLabel) and sorts
// (ParseSort), and splits rows that do not fit the terminal into pages turned with keys.
//
// The data flows in three steps, each usable alone:
//
//	Source.Read   → Objects   the cluster's Nodes, NodeClaims, Pods, NodePools and DaemonSets
//	                          (a client or informers, through pkg/livecluster)
//	NewSnapshot   → Snapshot  one row per node and per NodeClaim without a node, plus a summary;
//	                          pure: the clock and the prices are given, nothing is read
//	Render        → text      the header and the table, with bars and optional ANSI colours
//
// Watch repeats the three on a ticker and redraws the terminal in place until its context ends
// or q is pressed; keys read from the terminal (EnableKeys) turn the pages.
//
// Prices come from a Prices (the embedded EC2 catalog's on-demand prices and modelled spot
// prices, catalog.DefaultPrices, in practice), looked up by the instance type, zone and capacity
// type labels Karpenter puts on nodes and NodeClaims. Requests are the effective pod requests of
// pkg/scheduling, as the kube-scheduler counts them.
package view
