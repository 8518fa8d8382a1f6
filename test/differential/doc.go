// Package differential runs the same workloads under Karpenter v1.15.0's own controller (its
// KWOK cloud provider, with the KWOK controller keeping its nodes and pods alive) and under
// this project's controller (its simulated cloud), each on a fresh control plane, and compares
// what they did: nodes, $/hour, time to all pods Running, disruption decisions and the final
// fleet. See README.md.
package differential
