// Package validation checks and defaults the project's objects (NodePool, NodeClaim,
// EC2NodeClass and the legacy Provisioner and AWSNodeTemplate) offline, the way the API server
// does when they are created or updated, so that `karpenter simulate` and `karpenter convert`
// refuse what a cluster would refuse and store what a cluster would store.
//
// It does not reimplement any rule. It runs the CustomResourceDefinitions embedded in
// config/crd through the API server's own code from k8s.io/apiextensions-apiserver, built once
// per served version by New:
//
//   - the OpenAPI v3 schema (types, enums, patterns, bounds, required fields, formats), with
//     pkg/apiserver/validation, the validator behind every custom resource;
//   - the CEL rules (x-kubernetes-validations, transition rules with oldSelf included), with
//     pkg/apiserver/schema/cel, under the server's cost limits: celconfig.PerCallLimit per
//     expression and celconfig.RuntimeCELCostBudget per object;
//   - the defaults (pkg/apiserver/schema/defaulting), the pruning of unknown fields
//     (pkg/apiserver/schema/pruning), ObjectMeta coercion and embedded-object checks
//     (pkg/apiserver/schema/objectmeta), list-type invariants (pkg/apiserver/schema/listtype);
//   - the ObjectMeta checks of k8s.io/apimachinery (name present and a DNS subdomain (RFC
//     1123), labels, annotations, finalizers, owner references), and the scale subresource's
//     replica checks.
//
// The steps follow the server's request path: decoding (metadata coerced, unknown fields
// pruned, nulls dropped, defaults applied), preparation (status dropped on create and kept from
// the old object on update, namespace cleared for cluster-scoped kinds, generateName expanded),
// then validation. CEL rules are skipped when a blocking schema error was found, with the
// server's note saying so, and updates ratchet: errors in parts left unchanged from an old,
// already invalid object are not reported (CRDValidationRatcheting, GA since Kubernetes 1.33).
// Errors are field.Errors with the server's field paths, types and details, and ValidateObject
// returns the same 422 Invalid error the server sends.
//
// Built-in kinds (Pods, Deployments, … RuntimeClasses) are checked by ValidateBuiltin with the
// server's own defaulting, conversion and registry strategies from k8s.io/kubernetes, and
// PodCreation makes a pod what the server stores on create (defaults, the RuntimeClass
// admission plugin, PrepareForCreate), for the simulator's pods.
//
// Not covered: admission webhooks and ValidatingAdmissionPolicies (the project installs none),
// the request size limit, and fieldValidation=Strict, whose unknown-field report is available
// separately as UnknownFields. The package tests run one table of objects through both this
// package and a real kube-apiserver and require identical verdicts and error causes.
package validation
