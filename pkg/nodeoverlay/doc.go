// Package nodeoverlay applies NodeOverlays (karpenter.sh/v1alpha1, the NodeOverlay feature
// gate, alpha, off by default as in Karpenter v1.15): changes to what the scheduler believes
// about the instance types an overlay's requirements select.
//
// # The flow
//
//	NodeOverlays, NodePools ─► Controller ─► Store ─► Decorate(cloud) ─► provisioning,
//	(+ the cloud's own types)   evaluates     (per       GetInstanceTypes    disruption, static
//	                            in order,     NodePool,                      NodePools, cost
//	                            writes        type,                          metrics
//	                            status        offering)  cloud.SetOverlay ─► Create launches and
//	                                                                         bills by them
//
// The Controller lists every NodeOverlay and NodePool, asks the undecorated cloud for each
// NodePool's instance types, and evaluates the overlays in Karpenter's order (higher weight
// first; among equal weights, the name later in the alphabet first). For each overlay:
//
//  1. Checks the CRD cannot make (RuntimeValidate): requirement keys and values are valid label
//     keys and values outside the restricted domains; a failure sets ValidationSucceeded False,
//     reason RuntimeValidation, and the overlay is skipped.
//  2. Selection: an offering of an instance type of a NodePool is selected when the overlay's
//     requirements match the labels a node launched as it would carry (the type's labels,
//     zone, capacity type, karpenter.sh/nodepool and the NodePool's template labels). An
//     instance type is selected when any of its offerings is.
//  3. Conflicts: a price (or priceAdjustment) conflicts when an overlay of the same weight
//     already priced one of the selected offerings; a capacity when an overlay of the same
//     weight already set one of its resources on a selected type. An overlay of lower weight
//     never conflicts with a higher one: it only fills in what the higher left unset. A
//     conflicting overlay gets ValidationSucceeded False, reason Conflict, and changes nothing
//     anywhere (an overlay is applied whole or not at all).
//  4. Otherwise its changes are recorded in a new table, which replaces the Store's at once
//     when every overlay has been evaluated.
//
// Ready rolls up ValidationSucceeded. The Store answers, per NodePool, with the instance types
// changed: each selected offering's price adjusted (a signed amount or percentage, never below
// zero) or replaced, extended resources added to Capacity (cpu, memory, ephemeral-storage and
// pods cannot be), and PriceOverlaid / CapacityOverlaid set. Until the Controller has
// evaluated a NodePool, its instance types are an error (NotEvaluatedError): the callers skip
// the NodePool rather than schedule on prices that are about to change, as Karpenter does.
//
// Decorate wraps the cloud provider so every consumer of instance types sees the adjusted
// ones. Annotate marks a new NodeClaim karpenter.sh/price-overlay-applied and
// karpenter.sh/capacity-overlay-applied ("true") when one of its instance types was changed,
// as Karpenter does; the AWS provider then launches a prioritized fleet whose overrides carry
// the adjusted prices as priorities, and the simulated cloud launches and bills the adjusted
// price.
//
// # Differences from Karpenter, on purpose
//
//   - A capacity conflict is a resource set twice at the same weight by any two overlays;
//     Karpenter compares an overlay only with the last one of its weight, so of three equal
//     overlays setting the same resource it may apply two.
//   - The Store is replaced before the statuses are written, so a status write that fails
//     (a conflict, the API server away) does not hold back the evaluation; Karpenter writes
//     the statuses first and retries the whole evaluation on a conflict.
//   - A conflict's message names the other overlay, the weight, and the offering or resource
//     both set ("conflict with another overlay" in Karpenter).
//   - `karpenter simulate` refuses a workload with a NodeOverlay while the gate is off, where
//     Karpenter would leave it unread.
package nodeoverlay
