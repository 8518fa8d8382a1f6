// Package memory owns the embedded cluster of `karpenter simulate`: Client, an in-memory API
// server behind controller-runtime's client.Client (and client.FieldIndexer), so the controllers
// that run in the cluster run unchanged, offline, on a virtual clock.
//
// It stores objects of every kind the scheme registers, typed, and answers typed,
// unstructured and metadata-only (PartialObjectMetadata) reads and writes. It has the semantics
// of kube-apiserver for what controllers rely on, checked case by case against a real API
// server by this package's conformance suite:
//
//   - Create: generateName (a 5-character suffix from a seeded generator, so runs repeat), uid,
//     resourceVersion, creationTimestamp from the clock in whole seconds, generation 1 for the
//     kinds that have one, AlreadyExists, NotFound for a missing namespace and Forbidden for a
//     terminating one, name validation; the status of kinds with a status subresource is
//     dropped (Nodes keep theirs); a Pod gets phase Pending, its QoS class and the default 30s
//     termination grace period; a Namespace its kubernetes finalizer and phase Active; custom
//     resources their CRD structural defaults.
//   - Update and Patch (JSON merge patch, JSON patch, strategic merge patch for built-in kinds):
//     resourceVersion conflicts, server-owned metadata kept, status kept for kinds with a
//     status subresource, generation bumped when anything but metadata and status changes, no
//     new version when nothing changes, no new finalizers on an object being deleted, and the
//     object removed when its last finalizer goes. Status().Update/Patch change only what the
//     status subresource may change.
//   - Delete: finalizers keep the object with deletionTimestamp set; a bound Pod terminates
//     gracefully (deletionTimestamp = now + grace period) until CollectGarbage, playing its
//     kubelet, finds the period over; preconditions; propagation policies. The garbage
//     collector and the namespace controller run synchronously: dependents whose every owner is
//     gone are deleted before Delete returns, foreground deletion waits for blocking dependents,
//     orphaning strips owner references, a deleted namespace is emptied and removed.
//   - List: label selectors, field selectors (metadata.name, metadata.namespace, the built-in
//     ones of Pods, Nodes, Events, Namespaces and Secrets, and any field registered with
//     IndexField), Limit and Continue, in etcd's key order. Pod spec.nodeName and Node
//     spec.providerID are indexed, so the pods of a node are found without a scan.
//   - Subresources: status; eviction honouring PodDisruptionBudgets (429 TooManyRequests when a
//     budget refuses); binding.
//
// Objects are deep-copied on the way in and out, with typed DeepCopyInto (no JSON) except for
// patches; stored objects are never modified, only replaced, so readers copy them outside the
// lock (large lists on several goroutines) and a new version shares what did not change with
// the previous one. One RWMutex guards the store. OnChange feeds
// every added, modified and deleted object to the simulator so it can enqueue reconciles;
// EventRecorderFor writes Events into the store. CollectGarbage and SyncDisruptionBudgets do the
// time-driven work of kube-controller-manager and the kubelets.
//
// Known differences from a real API server:
//
//   - No admission webhooks, no OpenAPI, CEL or built-in validation beyond object names, the
//     finalizer rule and the eviction and binding checks; immutable fields (a Pod's spec, a
//     NodeClaim's spec) can be changed.
//   - No defaulting of built-in kinds beyond the fields listed above (no restartPolicy,
//     dnsPolicy, imagePullPolicy, …); CRD defaults come from the CRDs the client knows (the
//     project's, plus WithCustomResourceDefinitions).
//   - Every kind outside client-go's scheme counts as a custom resource (generation always
//     kept, strategic merge patches refused with 415); without a CRD it is namespaced.
//   - No managedFields and no server-side apply (Apply and apply patches fail with
//     MethodNotSupported); no watch; no conversion between versions (each version of a kind
//     is its own collection); no scale or other subresources.
//   - Node spec.providerID and fields registered with IndexField are accepted as field
//     selectors; kube-apiserver accepts only its built-in field selectors.
//   - Garbage collection and namespace deletion complete synchronously instead of shortly
//     after; pods of nodes that do not exist are removed by CollectGarbage at once (the pod
//     garbage collector waits 40s).
//   - Evictions compute the budget from the pods at that moment instead of reading the status
//     the disruption controller wrote; a Running pod without a Ready condition counts as
//     healthy; the status keeps no disruptedPods.
//   - Event aggregation is by identical event only (no similar-event aggregation or spam
//     filtering).
package memory
