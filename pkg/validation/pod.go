package validation

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	nodev1client "k8s.io/client-go/kubernetes/typed/node/v1"
	nodev1listers "k8s.io/client-go/listers/node/v1"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/kubernetes/plugin/pkg/admission/runtimeclass"
)

// PodCreation turns pods into what the API server stores when they are created, in a
// cluster whose RuntimeClasses are given once to NewPodCreation.
type PodCreation struct {
	// runtimeClass is the API server's RuntimeClass admission plugin, reading the classes.
	runtimeClass *runtimeclass.RuntimeClass
	// classes are the RuntimeClasses by name.
	classes nodev1listers.RuntimeClassLister
}

// NewPodCreation prepares PodCreation.Stored for a cluster with runtimeClasses (none when
// nil): the API server's RuntimeClass admission plugin is set up to read them.
func NewPodCreation(runtimeClasses []*nodev1.RuntimeClass) (*PodCreation, error) {
	client := &runtimeClassClient{}
	factory := informers.NewSharedInformerFactory(client, 0)
	informer := factory.Node().V1().RuntimeClasses()
	for _, rc := range runtimeClasses {
		if err := informer.Informer().GetIndexer().Add(rc.DeepCopy()); err != nil {
			return nil, fmt.Errorf("adding RuntimeClass %s: %w", rc.Name, err)
		}
	}
	client.lister = informer.Lister()
	plugin := runtimeclass.NewRuntimeClass()
	plugin.SetExternalKubeInformerFactory(factory)
	plugin.SetExternalKubeClientSet(client)
	if err := plugin.ValidateInitialization(); err != nil {
		return nil, err
	}
	return &PodCreation{runtimeClass: plugin, classes: client.lister}, nil
}

// Stored returns p as the API server stores it when it is created, with the server's own
// code from k8s.io/kubernetes, in the order of its create path:
//
//   - the v1 defaults (SetDefaults_Pod and those of every field: a container with limits and
//     no requests requests its limits, a hostNetwork pod's container ports are host ports, and
//     so on), then the conversion to the internal type;
//   - the RuntimeClass admission plugin (plugin/pkg/admission/runtimeclass), mutating then
//     validating: a pod naming a RuntimeClass gets its overhead (spec.overhead) and its
//     scheduling (nodeSelector merged into the pod's, tolerations added); it is refused when
//     the class does not exist, when its nodeSelector conflicts with the pod's, or when the
//     pod's own overhead differs from the class's;
//   - the pod registry strategy's PrepareForCreate: matchLabelKeys and mismatchLabelKeys of
//     pod (anti-)affinity terms merged into their labelSelector (key In, key NotIn the pod's
//     value), topology spread constraints' matchLabelKeys likewise, the status reset (Pending,
//     its QoS class), and then the strategy's Validate;
//
// then the conversion back to v1. A pod without a namespace is created in "default". p itself
// is not changed; nor is the rest of its metadata filled (uid, creationTimestamp). A refusal is returned as field errors with the server's message and
// a field path relative to the pod (spec.runtimeClassName, spec.nodeSelector[key],
// spec.overhead); an internal failure as a field.InternalError. The other admission plugins
// (DefaultTolerationSeconds, Priority, ServiceAccount, LimitRanger, webhooks, …) are not run.
func (c *PodCreation) Stored(p *corev1.Pod) (*corev1.Pod, field.ErrorList) {
	external := p.DeepCopy()
	if external.Namespace == "" {
		external.Namespace = metav1.NamespaceDefault
	}
	legacyscheme.Scheme.Default(external)
	internal := &api.Pod{}
	if err := legacyscheme.Scheme.Convert(external, internal, nil); err != nil {
		return nil, field.ErrorList{field.InternalError(nil, fmt.Errorf("converting pod %s: %w", p.Name, err))}
	}
	ctx := genericapirequest.WithNamespace(context.Background(), internal.Namespace)
	ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: "create", APIVersion: "v1", Resource: "pods",
		Namespace: internal.Namespace, Name: internal.Name,
	})
	attrs := admission.NewAttributesRecord(internal, nil, api.Kind("Pod").WithVersion(""), internal.Namespace, internal.Name,
		api.Resource("pods").WithVersion(""), "", admission.Create, &metav1.CreateOptions{}, false, nil)
	if err := c.runtimeClass.Admit(ctx, attrs, nil); err != nil {
		return nil, field.ErrorList{c.refusal(p, err)}
	}
	pod.Strategy.PrepareForCreate(ctx, internal)
	if errs := pod.Strategy.Validate(ctx, internal); len(errs) > 0 {
		return nil, errs
	}
	if err := c.runtimeClass.Validate(ctx, attrs, nil); err != nil {
		return nil, field.ErrorList{c.refusal(p, err)}
	}
	out := &corev1.Pod{}
	if err := legacyscheme.Scheme.Convert(internal, out, nil); err != nil {
		return nil, field.ErrorList{field.InternalError(nil, fmt.Errorf("converting pod %s: %w", p.Name, err))}
	}
	out.TypeMeta = p.TypeMeta
	return out, nil
}

// refusal is the RuntimeClass admission plugin's refusal err of pod (as written) as a field
// error at the field it concerns: the class's name when it does not exist, the node selector's
// key when it conflicts with the class's, else the overhead (the plugin's other refusal).
func (c *PodCreation) refusal(pod *corev1.Pod, err error) *field.Error {
	if !apierrors.IsForbidden(err) {
		return field.InternalError(nil, err)
	}
	detail := err.Error()
	if status, ok := err.(apierrors.APIStatus); ok {
		detail = status.Status().Message
	}
	if name := pod.Spec.RuntimeClassName; name != nil {
		rc, getErr := c.classes.Get(*name)
		if apierrors.IsNotFound(getErr) {
			return field.Forbidden(field.NewPath("spec", "runtimeClassName"), detail)
		}
		if rc != nil && rc.Scheduling != nil {
			for key, value := range rc.Scheduling.NodeSelector {
				if podValue, ok := pod.Spec.NodeSelector[key]; ok && podValue != value {
					return field.Forbidden(field.NewPath("spec", "nodeSelector").Key(key), detail)
				}
			}
		}
	}
	return field.Forbidden(field.NewPath("spec", "overhead"), detail)
}

// runtimeClassClient is the client the RuntimeClass admission plugin reads a class through
// when its lister has not got it (in a cluster, an informer that lags): here both read the
// same classes. The plugin calls nothing else; any other method would panic on the nil
// kubernetes.Interface.
type runtimeClassClient struct {
	kubernetes.Interface
	lister nodev1listers.RuntimeClassLister
}

// NodeV1 returns the client's node.k8s.io/v1 group.
func (c *runtimeClassClient) NodeV1() nodev1client.NodeV1Interface { return nodeV1{c: c} }

// nodeV1 is runtimeClassClient's node.k8s.io/v1 group: its RuntimeClasses only.
type nodeV1 struct {
	nodev1client.NodeV1Interface
	c *runtimeClassClient
}

// RuntimeClasses returns the client's RuntimeClasses.
func (n nodeV1) RuntimeClasses() nodev1client.RuntimeClassInterface { return runtimeClasses{c: n.c} }

// runtimeClasses reads RuntimeClasses from runtimeClassClient's lister: Get only.
type runtimeClasses struct {
	nodev1client.RuntimeClassInterface
	c *runtimeClassClient
}

// Get returns the RuntimeClass of that name, or a NotFound error.
func (r runtimeClasses) Get(_ context.Context, name string, _ metav1.GetOptions) (*nodev1.RuntimeClass, error) {
	if r.c.lister == nil {
		return nil, apierrors.NewNotFound(nodev1.Resource("runtimeclasses"), name)
	}
	rc, err := r.c.lister.Get(name)
	if err != nil {
		return nil, err
	}
	return rc.DeepCopy(), nil
}
