// Package acceptance holds the test that applies what every converter writes for every golden
// case (kops, legacy, and the Kubernetes objects of eksctl) to a real API server with the
// project's CRDs, as a server-side dry run with strict field validation: the CRD schemas and
// CEL rules must accept all of it. It has no code of its own.
package acceptance
