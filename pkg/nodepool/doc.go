// Package nodepool owns what Karpenter derives from a NodePool: the NodeClaims its template
// stamps out, the hash of the template's static fields (for drift), its readiness, and the
// controllers that keep its status (resources, node count, conditions) and its static replicas.
//
// StatusController writes a NodePool's status: the capacity and count of its NodeClaims, and
// the conditions NodeClassReady (its EC2NodeClass exists and is Ready), ValidationSucceeded
// (Validate, the checks the CRD schema cannot make) and Ready (both). Other controllers launch
// from a NodePool only when IsReady. StaticController keeps a Ready static NodePool (replicas
// set) at DesiredReplicas NodeClaims, spread over zones, deleting extras uninitialized and
// newest first. RegistrationHealth keeps the NodeRegistrationHealthy condition from what the
// NodeClaim lifecycle reports of the NodePool's claims (registered, or deleted without having
// registered), and resets it when the NodePool or its NodeClass changes.
//
// All three follow the project's controller shape: a constructor with explicit dependencies
// (NewStatusController, NewStaticController, NewRegistrationHealth), Reconcile callable
// directly (the simulator drives them on an in-memory client without a manager), and Register
// wiring the watches into a controller-runtime manager.
package nodepool
