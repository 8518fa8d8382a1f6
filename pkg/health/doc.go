// Package health decides whether, when and how node repair acts on a Node: it matches the
// Node's conditions against the cloud provider's repair policies (cloudprovider.RepairPolicy),
// as Karpenter v1.15.0's health.RepairPolicyMatcher (pkg/controllers/node/health/policy.go).
//
// NewMatcher validates and compiles a policy set once: every policy names a condition type, a
// status of True, False or Unknown, a toleration and a drain bound that are not negative, a
// priority from 0 to 100, an action (ReplaceNode or RebootNode) and a reason pattern that
// compiles; exactly one policy has no pattern, the set's default, and it replaces.
//
// Matcher.Match lists, for each of a Node's conditions whose type and status a policy names,
// the policies of that type and status whose pattern matches the condition's reason, or the
// default when none does; each becomes eligible its toleration after the condition's
// lastTransitionTime (never before the Node was created). Resolve merges the matches eligible
// at a time into one Result: the most disruptive action wins, then the highest priority, then
// the earliest eligible, then the lowest condition type; the drain bound is the shortest of
// all eligible matches'; and the repair score (Result.ScoreAt), which orders nodes for repair,
// is the highest of their dense priority rank plus the time since eligible over 30 minutes, so
// a node waiting long enough overtakes a fresher one of a higher rank.
//
// The package does no I/O and reads no clock: callers pass the time.
package health
