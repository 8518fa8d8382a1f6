package nodeclaim

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// Field indexes IndexFields registers. They speed up finding the Node or NodeClaim of a
// provider ID; every lookup falls back to listing everything when the client has no index.
const (
	// ProviderIDIndex indexes Nodes by spec.providerID.
	ProviderIDIndex = "spec.providerID"
	// NodeClaimProviderIDIndex indexes NodeClaims by status.providerID.
	NodeClaimProviderIDIndex = "status.providerID"
	// NodeClaimNodeNameIndex indexes NodeClaims by status.nodeName.
	NodeClaimNodeNameIndex = "status.nodeName"
)

// IndexFields registers ProviderIDIndex on Nodes, and NodeClaimProviderIDIndex and
// NodeClaimNodeNameIndex on NodeClaims, with indexer (a manager's field indexer, before the
// manager starts).
func IndexFields(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &corev1.Node{}, ProviderIDIndex, func(o client.Object) []string {
		if n, ok := o.(*corev1.Node); ok && n.Spec.ProviderID != "" {
			return []string{n.Spec.ProviderID}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing nodes by provider id: %w", err)
	}
	if err := indexer.IndexField(ctx, &karpv1.NodeClaim{}, NodeClaimProviderIDIndex, func(o client.Object) []string {
		if c, ok := o.(*karpv1.NodeClaim); ok && c.Status.ProviderID != "" {
			return []string{c.Status.ProviderID}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing nodeclaims by provider id: %w", err)
	}
	if err := indexer.IndexField(ctx, &karpv1.NodeClaim{}, NodeClaimNodeNameIndex, func(o client.Object) []string {
		if c, ok := o.(*karpv1.NodeClaim); ok && c.Status.NodeName != "" {
			return []string{c.Status.NodeName}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing nodeclaims by node name: %w", err)
	}
	return nil
}

// NodesByProviderID returns the Nodes whose spec.providerID is providerID, sorted by name
// (normally none or one). It uses ProviderIDIndex when the reader has it and lists every Node
// otherwise.
func NodesByProviderID(ctx context.Context, reader client.Reader, providerID string) ([]*corev1.Node, error) {
	if providerID == "" {
		return nil, nil
	}
	list := &corev1.NodeList{}
	if err := reader.List(ctx, list, client.MatchingFields{ProviderIDIndex: providerID}); err != nil {
		// No such index (or field selector) on this reader: list them all.
		list = &corev1.NodeList{}
		if err := reader.List(ctx, list); err != nil {
			return nil, fmt.Errorf("listing nodes: %w", err)
		}
	}
	var out []*corev1.Node
	for i := range list.Items {
		// Filter even after an indexed list: a reader that ignores field selectors must not
		// hand us another node.
		if list.Items[i].Spec.ProviderID == providerID {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// NodeClaimsByProviderID returns the NodeClaims whose status.providerID is providerID, in list
// order (normally none or one). It uses NodeClaimProviderIDIndex when the reader has it and
// lists every NodeClaim otherwise.
func NodeClaimsByProviderID(ctx context.Context, reader client.Reader, providerID string) ([]*karpv1.NodeClaim, error) {
	return nodeClaimsBy(ctx, reader, NodeClaimProviderIDIndex, providerID, func(c *karpv1.NodeClaim) string { return c.Status.ProviderID })
}

// NodeClaimsByNodeName returns the NodeClaims whose status.nodeName is nodeName, in list order
// (normally none or one). It uses NodeClaimNodeNameIndex when the reader has it and lists every
// NodeClaim otherwise.
func NodeClaimsByNodeName(ctx context.Context, reader client.Reader, nodeName string) ([]*karpv1.NodeClaim, error) {
	return nodeClaimsBy(ctx, reader, NodeClaimNodeNameIndex, nodeName, func(c *karpv1.NodeClaim) string { return c.Status.NodeName })
}

// nodeClaimsBy lists the NodeClaims whose field (read by get) is value, through index when the
// reader has it. It filters even after an indexed list, in case the reader ignored the selector.
func nodeClaimsBy(ctx context.Context, reader client.Reader, index, value string, get func(*karpv1.NodeClaim) string) ([]*karpv1.NodeClaim, error) {
	if value == "" {
		return nil, nil
	}
	list := &karpv1.NodeClaimList{}
	if err := reader.List(ctx, list, client.MatchingFields{index: value}); err != nil {
		list = &karpv1.NodeClaimList{}
		if err := reader.List(ctx, list); err != nil {
			return nil, fmt.Errorf("listing nodeclaims: %w", err)
		}
	}
	var out []*karpv1.NodeClaim
	for i := range list.Items {
		if get(&list.Items[i]) == value {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}
