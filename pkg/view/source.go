package view

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/apis"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// Source reads the objects of one frame.
type Source interface {
	Read(ctx context.Context) (Objects, error)
}

// ReaderSource reads the objects from a controller-runtime reader: a client, which lists from
// the API server on every Read, or an informer cache.
type ReaderSource struct {
	// Reader lists the objects.
	Reader client.Reader
	// Selector limits the Nodes and NodeClaims listed; nil lists all. Pods are all listed.
	Selector labels.Selector
	// NodeClaims says whether to list NodeClaims and NodePools: false for clusters that do
	// not serve them.
	NodeClaims bool
}

// Read implements Source.
func (s *ReaderSource) Read(ctx context.Context) (Objects, error) {
	// Frames only read the objects: a cache need not copy them.
	opts := []client.ListOption{client.UnsafeDisableDeepCopy}
	selected := []client.ListOption{client.UnsafeDisableDeepCopy}
	if s.Selector != nil && !s.Selector.Empty() {
		selected = append(selected, client.MatchingLabelsSelector{Selector: s.Selector})
	}
	var nodes corev1.NodeList
	if err := s.Reader.List(ctx, &nodes, selected...); err != nil {
		return Objects{}, fmt.Errorf("listing nodes: %w", err)
	}
	var pods corev1.PodList
	if err := s.Reader.List(ctx, &pods, opts...); err != nil {
		return Objects{}, fmt.Errorf("listing pods: %w", err)
	}
	objs := Objects{Nodes: nodes.Items, Pods: pods.Items}
	if s.NodeClaims {
		var claims karpv1.NodeClaimList
		if err := s.Reader.List(ctx, &claims, selected...); err != nil {
			return Objects{}, fmt.Errorf("listing nodeclaims: %w", err)
		}
		objs.NodeClaims = claims.Items
		var pools karpv1.NodePoolList
		if err := s.Reader.List(ctx, &pools, opts...); err != nil {
			return Objects{}, fmt.Errorf("listing nodepools: %w", err)
		}
		objs.NodePools = pools.Items
	}
	return objs, nil
}

// NewClientSource returns a Source that lists from the API server of cfg on every Read, for a
// single frame. NodeClaims are left out when the cluster does not serve them.
func NewClientSource(cfg *rest.Config, selector labels.Selector) (*ReaderSource, error) {
	c, err := client.New(cfg, client.Options{Scheme: apis.NewScheme()})
	if err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	served, err := servesNodeClaims(c.RESTMapper())
	if err != nil {
		return nil, err
	}
	return &ReaderSource{Reader: c, Selector: selector, NodeClaims: served}, nil
}

// NewCacheSource returns a Source that reads from informers on the API server of cfg, for a
// live view: it starts them, waits until they have listed everything, and keeps them watching
// until ctx ends. NodeClaims are left out when the cluster does not serve them.
func NewCacheSource(ctx context.Context, cfg *rest.Config, selector labels.Selector) (*ReaderSource, error) {
	scheme := apis.NewScheme()
	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	served, err := servesNodeClaims(direct.RESTMapper())
	if err != nil {
		return nil, err
	}
	// Informers retry a list they may not make forever: try each once, to fail fast when
	// access is denied.
	probe := &ReaderSource{Reader: limitedReader{direct, 1}, NodeClaims: served}
	if _, err := probe.Read(ctx); err != nil {
		return nil, err
	}
	byObject := map[client.Object]cache.ByObject{}
	if selector != nil && !selector.Empty() {
		byObject[&corev1.Node{}] = cache.ByObject{Label: selector}
		if served {
			byObject[&karpv1.NodeClaim{}] = cache.ByObject{Label: selector}
		}
	}
	c, err := cache.New(cfg, cache.Options{
		Scheme:                      scheme,
		Mapper:                      direct.RESTMapper(),
		ByObject:                    byObject,
		DefaultTransform:            cache.TransformStripManagedFields(),
		ReaderFailOnMissingInformer: true,
	})
	if err != nil {
		return nil, fmt.Errorf("creating cache: %w", err)
	}
	kinds := []client.Object{&corev1.Node{}, &corev1.Pod{}}
	if served {
		kinds = append(kinds, &karpv1.NodeClaim{}, &karpv1.NodePool{})
	}
	for _, obj := range kinds {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			return nil, fmt.Errorf("watching %T: %w", obj, err)
		}
	}
	started := make(chan error, 1)
	go func() { started <- c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		select {
		case err := <-started:
			if err != nil {
				return nil, fmt.Errorf("starting informers: %w", err)
			}
		default:
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, errors.New("informers did not sync")
	}
	return &ReaderSource{Reader: c, Selector: selector, NodeClaims: served}, nil
}

// servesNodeClaims reports whether the cluster serves karpenter.sh/v1 NodeClaims.
func servesNodeClaims(mapper meta.RESTMapper) (bool, error) {
	gk := schema.GroupKind{Group: karpv1.Group, Kind: "NodeClaim"}
	_, err := mapper.RESTMapping(gk, karpv1.SchemeGroupVersion.Version)
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err):
		return false, nil
	default:
		return false, fmt.Errorf("discovering nodeclaims: %w", err)
	}
}

// limitedReader lists at most limit objects of each kind.
type limitedReader struct {
	client.Reader
	limit int64
}

func (r limitedReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.Reader.List(ctx, list, append(opts, client.Limit(r.limit))...)
}
