package view

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/apis"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/livecluster"
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
	// Selector limits the Nodes and NodeClaims listed; nil lists all. Pods and DaemonSets are
	// all listed.
	Selector labels.Selector
	// NodeClaims says whether to list NodeClaims and NodePools: false for clusters that do
	// not serve them.
	NodeClaims bool
}

// Read implements Source.
func (s *ReaderSource) Read(ctx context.Context) (Objects, error) {
	kinds := []livecluster.Kind{livecluster.Nodes, livecluster.Pods, livecluster.DaemonSets}
	if s.NodeClaims {
		kinds = append(kinds, livecluster.NodeClaims, livecluster.NodePools)
	}
	// Frames only read the objects: a cache need not copy them.
	lists, err := livecluster.List(ctx, s.Reader, kinds, s.Selector, client.UnsafeDisableDeepCopy)
	if err != nil {
		return Objects{}, err
	}
	objs := Objects{Nodes: lists[0].(*corev1.NodeList).Items, Pods: lists[1].(*corev1.PodList).Items, DaemonSets: lists[2].(*appsv1.DaemonSetList).Items}
	if s.NodeClaims {
		if claims, ok := lists[3].(*karpv1.NodeClaimList); ok {
			objs.NodeClaims = claims.Items
		}
		if pools, ok := lists[4].(*karpv1.NodePoolList); ok {
			objs.NodePools = pools.Items
		}
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
	served, err := livecluster.ServesKarpenter(c.RESTMapper())
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
	served, err := livecluster.ServesKarpenter(direct.RESTMapper())
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
	kinds := []client.Object{&corev1.Node{}, &corev1.Pod{}, &appsv1.DaemonSet{}}
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

// limitedReader lists at most limit objects of each kind.
type limitedReader struct {
	client.Reader
	limit int64
}

func (r limitedReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.Reader.List(ctx, list, append(opts, client.Limit(r.limit))...)
}
