package legacy

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	awsv1alpha1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1alpha1"
	karpv1alpha5 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1alpha5"
	"github.com/openkarpenter/karpenter/pkg/convert"
)

// Options are what the conversion cannot read from the legacy objects.
type Options struct {
	// IgnoreDefaults leaves out the requirements Karpenter v0.x added to every Provisioner
	// (linux, amd64, on-demand, and the c, m and r categories of generation 3 and later when no
	// instance type was constrained), which v1 does not add.
	IgnoreDefaults bool `json:"ignoreDefaults,omitempty"`
	// InstanceProfile is used for templates without one: what Karpenter v0.x's
	// aws.defaultInstanceProfile setting named.
	InstanceProfile string `json:"instanceProfile,omitempty"`
	// Role is used instead of InstanceProfile: the IAM role of that instance profile, for which
	// Karpenter v1 manages instance profiles itself.
	Role string `json:"role,omitempty"`
}

// lastApplied is kubectl's annotation, which is not carried over.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// provisioner is a decoded Provisioner.
type provisioner struct {
	obj   *karpv1alpha5.Provisioner
	label string // `Provisioner "name"`
	src   convert.Source
}

// template is a decoded AWSNodeTemplate.
type template struct {
	obj   *awsv1alpha1.AWSNodeTemplate
	label string
	used  bool
	src   convert.Source
}

// converter holds one conversion's input and output.
type converter struct {
	opts         Options
	provisioners []*provisioner
	templates    map[string]*template
	order        []string // template names in input order
	result       *convert.Result
	errs         convert.Errors
}

// Convert translates the Provisioners and AWSNodeTemplates among sources into NodePools and
// EC2NodeClasses: for each Provisioner, in order, the EC2NodeClass it uses (once) and its
// NodePool; then the AWSNodeTemplates no Provisioner uses. Other documents are skipped with a
// warning. Problems that make a faithful translation impossible are returned together as
// convert.Errors, with no documents.
func Convert(sources []convert.Source, opts Options) (*convert.Result, error) {
	c := &converter{opts: opts, templates: map[string]*template{}, result: &convert.Result{}}
	if opts.InstanceProfile != "" && opts.Role != "" {
		return nil, convert.Errors{errors.New("give an instance profile or a role, not both")}
	}
	c.decode(sources)
	plans := c.plan()
	emitted := map[string]bool{}
	for _, p := range c.provisioners {
		plan := plans[p]
		if plan == nil {
			continue
		}
		if !emitted[plan.nodeClassName] {
			emitted[plan.nodeClassName] = true
			c.addNodeClass(plan)
		}
		doc := convert.Document{File: "nodepool-" + p.obj.Name + ".yaml", From: &p.src}
		doc.Content = c.nodePool(p, plan.nodeClassName, &doc)
		c.result.Add(doc)
	}
	for _, name := range c.order {
		t := c.templates[name]
		if t.used || emitted[name] {
			continue
		}
		c.result.Warnf("%s: no Provisioner uses it; converted on its own", t.label)
		c.addNodeClass(&nodeClassPlan{nodeClassName: name, template: t})
	}
	// What was written despite the errors is checked too, so that one run lists everything.
	if err := c.result.Validate(); err != nil {
		c.errs = append(c.errs, convert.AsErrors(err)...)
	}
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	if len(c.result.Documents) == 0 {
		c.result.Warnf("no Provisioner or AWSNodeTemplate in the input; nothing to write")
	}
	return c.result, nil
}

// decode reads the Provisioners and AWSNodeTemplates, reporting unknown fields.
func (c *converter) decode(sources []convert.Source) {
	seenProvisioners := map[string]convert.Source{}
	for _, src := range sources {
		switch {
		case src.Kind == "Provisioner" && src.APIVersion == karpv1alpha5.SchemeGroupVersion.String():
			p := &karpv1alpha5.Provisioner{}
			if !c.decodeObject(src, p) {
				continue
			}
			if first, ok := seenProvisioners[p.Name]; ok {
				c.errs = append(c.errs, src.FieldError(field.Invalid(field.NewPath("metadata", "name"), p.Name, "a second Provisioner of that name (the first is at "+first.At("metadata.name")+"): rename one")))
				continue
			}
			seenProvisioners[p.Name] = src
			for _, problem := range dropInvalidValues(p) {
				c.errs = append(c.errs, src.FieldError(problem))
			}
			c.provisioners = append(c.provisioners, &provisioner{obj: p, label: fmt.Sprintf("Provisioner %q", p.Name), src: src})
		case src.Kind == "AWSNodeTemplate" && src.APIVersion == awsv1alpha1.SchemeGroupVersion.String():
			t := &awsv1alpha1.AWSNodeTemplate{}
			if !c.decodeObject(src, t) {
				continue
			}
			if first := c.templates[t.Name]; first != nil {
				c.errs = append(c.errs, src.FieldError(field.Invalid(field.NewPath("metadata", "name"), t.Name, "a second AWSNodeTemplate of that name (the first is at "+first.src.At("metadata.name")+"): rename one")))
				continue
			}
			c.templates[t.Name] = &template{obj: t, label: fmt.Sprintf("AWSNodeTemplate %q", t.Name), src: src}
			c.order = append(c.order, t.Name)
		default:
			what := "a document without kind"
			if src.Kind != "" {
				what = src.APIVersion + " " + src.Object()
			}
			c.result.Warnf("%s: skipping %s, which is not a karpenter.sh/v1alpha5 Provisioner or karpenter.k8s.aws/v1alpha1 AWSNodeTemplate", src, what)
		}
	}
}

// maxTTLSeconds is the longest TTL that converts: the most whole seconds a Go time.Duration
// holds (2562047h47m16s, about 292 years). Karpenter reads expireAfter and consolidateAfter as
// such durations, so a longer one, though its CRD pattern allows the digits, cannot be read.
const maxTTLSeconds = int64(math.MaxInt64 / int64(time.Second))

// dropInvalidValues lists, and removes from p so that the rest still converts (and is checked),
// the values the Provisioner CRD refused (negative TTLs, a weight outside 1 to 100), TTLs longer
// than v1 durations hold, and negative limits: the v1 NodePool written from them would be
// refused too, or would launch nothing.
func dropInvalidValues(p *karpv1alpha5.Provisioner) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	for _, ttl := range []struct {
		name, never string
		value       **int64
	}{
		{"ttlSecondsAfterEmpty", "to never remove empty nodes", &p.Spec.TTLSecondsAfterEmpty},
		{"ttlSecondsUntilExpired", "to never expire nodes", &p.Spec.TTLSecondsUntilExpired},
	} {
		switch value := *ttl.value; {
		case value == nil:
		case *value < 0:
			errs = append(errs, field.Invalid(spec.Child(ttl.name), *value, "must be 0 or more seconds"))
			*ttl.value = nil
		case *value > maxTTLSeconds:
			errs = append(errs, field.Invalid(spec.Child(ttl.name), *value, fmt.Sprintf(
				"must be at most %d seconds (%s, about 292 years), the longest duration Karpenter reads; leave it out %s",
				maxTTLSeconds, secondsText(maxTTLSeconds), ttl.never)))
			*ttl.value = nil
		}
	}
	if w := p.Spec.Weight; w != nil && (*w < 1 || *w > 100) {
		errs = append(errs, field.Invalid(spec.Child("weight"), *w, "must be from 1 to 100"))
		p.Spec.Weight = nil
	}
	if p.Spec.Limits != nil {
		names := make([]string, 0, len(p.Spec.Limits.Resources))
		for name := range p.Spec.Limits.Resources {
			names = append(names, string(name))
		}
		sort.Strings(names)
		for _, name := range names {
			if q := p.Spec.Limits.Resources[corev1.ResourceName(name)]; q.Sign() < 0 {
				errs = append(errs, field.Invalid(spec.Child("limits", "resources").Key(name), q.String(), "must not be negative (leave the resource out for no limit)"))
				delete(p.Spec.Limits.Resources, corev1.ResourceName(name))
			}
		}
	}
	return errs
}

// decodeObject decodes a legacy object without its status. An unknown field is an error when
// it looks like a misspelling of a known one, and is otherwise dropped with a warning.
func (c *converter) decodeObject(src convert.Source, obj legacyObject) bool {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(src.JSON, &m); err != nil {
		c.errs = append(c.errs, src.DecodeError(err, nil, src.JSON))
		return false
	}
	delete(m, "status")
	data, err := json.Marshal(m)
	if err != nil {
		c.errs = append(c.errs, src.DecodeError(err, nil, src.JSON))
		return false
	}
	unknown, err := convert.DecodeStrict(data, obj)
	if err != nil {
		c.errs = append(c.errs, src.DecodeErrors(err, obj, data, decodeStrict)...)
		return false
	}
	if obj.GetName() == "" {
		c.errs = append(c.errs, src.FieldError(field.Required(field.NewPath("metadata", "name"), "every "+src.Kind+" has a name")))
		return false
	}
	ok := true
	for _, f := range unknown {
		if f.DidYouMean != "" {
			c.errs = append(c.errs, src.FieldError(field.Invalid(field.NewPath(f.Path), field.OmitValueType{},
				fmt.Sprintf("not a field of %s %s: did you mean %s?", src.APIVersion, src.Kind, f.DidYouMean))))
			ok = false
			continue
		}
		c.result.Warnf("%s: %s: %s: dropped (not a field of %s)", src.At(f.Path), src.Object(), f, src.APIVersion)
	}
	return ok
}

// decodeStrict decodes data into into, a runtime.Object, as convert.DecodeStrict, for
// Source.DecodeErrors.
func decodeStrict(data []byte, into any) error {
	_, err := convert.DecodeStrict(data, into.(runtime.Object))
	return err
}

// legacyObject is a decoded Provisioner or AWSNodeTemplate.
type legacyObject interface {
	runtime.Object
	GetName() string
}

// nodeClassPlan says how one EC2NodeClass is made.
type nodeClassPlan struct {
	nodeClassName string
	template      *template        // nil for an inline provider
	inline        *awsv1alpha1.AWS // the inline provider
	owner         *provisioner     // the Provisioner of an inline provider
	kubelet       *awsv1.KubeletConfiguration
	kubeletFrom   *provisioner
}

// plan decides each Provisioner's EC2NodeClass. An inline provider gets one named after the
// Provisioner. Provisioners sharing an AWSNodeTemplate share its EC2NodeClass, unless their
// kubelet settings (which v1 keeps in the EC2NodeClass) differ: then the first setting keeps
// the template's name and each other Provisioner gets its own copy, "<template>-<provisioner>".
func (c *converter) plan() map[*provisioner]*nodeClassPlan {
	plans := map[*provisioner]*nodeClassPlan{}
	byTemplate := map[string][]*nodeClassPlan{}
	for _, p := range c.provisioners {
		spec := p.obj.Spec
		path := field.NewPath("spec")
		kubelet := c.kubelet(p)
		switch {
		case spec.Provider != nil && spec.ProviderRef != nil:
			c.errs = append(c.errs, p.src.FieldError(field.Forbidden(path.Child("provider"), "provider and providerRef are mutually exclusive: keep one")))
		case spec.Provider != nil:
			aws, ok := c.inlineProvider(p)
			if ok {
				plans[p] = &nodeClassPlan{nodeClassName: p.obj.Name, inline: aws, owner: p, kubelet: kubelet, kubeletFrom: p}
			}
		case spec.ProviderRef != nil:
			ref := spec.ProviderRef
			if (ref.Kind != "" && ref.Kind != "AWSNodeTemplate") || (ref.APIVersion != "" && ref.APIVersion != awsv1alpha1.SchemeGroupVersion.String()) {
				c.errs = append(c.errs, p.src.FieldError(field.NotSupported(path.Child("providerRef"), strings.TrimSpace(ref.APIVersion+" "+ref.Kind), []string{"karpenter.k8s.aws/v1alpha1 AWSNodeTemplate"})))
				continue
			}
			t := c.templates[ref.Name]
			if t == nil {
				c.errs = append(c.errs, p.src.FieldError(field.Invalid(path.Child("providerRef", "name"), ref.Name, "no AWSNodeTemplate of that name in the input; give it too")))
				continue
			}
			t.used = true
			plan := &nodeClassPlan{nodeClassName: t.obj.Name, template: t, kubelet: kubelet, kubeletFrom: p}
			for _, other := range byTemplate[t.obj.Name] {
				if reflect.DeepEqual(other.kubelet, kubelet) {
					plan = other
					break
				}
			}
			if plan.kubeletFrom == p && len(byTemplate[t.obj.Name]) > 0 {
				plan.nodeClassName = t.obj.Name + "-" + p.obj.Name
				c.result.Warnf("%s: its kubeletConfiguration differs from that of other Provisioners using %s, and v1 keeps kubelet settings in the EC2NodeClass: it gets its own copy, EC2NodeClass %q",
					p.label, t.label, plan.nodeClassName)
			}
			if plan.kubeletFrom == p {
				byTemplate[t.obj.Name] = append(byTemplate[t.obj.Name], plan)
			}
			plans[p] = plan
		default:
			c.errs = append(c.errs, p.src.FieldError(field.Required(path.Child("providerRef"), "a Provisioner needs provider or providerRef for its AWS settings")))
		}
	}
	names := map[string]string{}
	for _, name := range c.order {
		names[name] = c.templates[name].label
	}
	for _, p := range c.provisioners {
		plan := plans[p]
		if plan == nil || plan.kubeletFrom != p || (plan.template != nil && plan.nodeClassName == plan.template.obj.Name) {
			continue
		}
		if other, taken := names[plan.nodeClassName]; taken {
			c.errs = append(c.errs, p.src.FieldError(field.Invalid(field.NewPath("metadata", "name"), p.obj.Name, fmt.Sprintf("its EC2NodeClass would be named %q, like the one from %s: rename one", plan.nodeClassName, other))))
			continue
		}
		names[plan.nodeClassName] = p.label
	}
	return plans
}

// inlineProvider decodes a Provisioner's spec.provider block strictly as the AWS settings.
func (c *converter) inlineProvider(p *provisioner) (*awsv1alpha1.AWS, bool) {
	var m map[string]any
	if err := json.Unmarshal(p.obj.Spec.Provider.Raw, &m); err != nil || m == nil {
		c.errs = append(c.errs, p.src.FieldError(field.Invalid(field.NewPath("spec", "provider"), field.OmitValueType{}, "want an object of AWS settings")))
		return nil, false
	}
	// Very old inline providers carried their own type; it says nothing more.
	delete(m, "apiVersion")
	delete(m, "kind")
	for _, key := range []string{"amiSelector", "userData", "detailedMonitoring"} {
		if _, ok := m[key]; ok {
			c.result.Warnf("%s: spec.provider.%s: dropped (an inline provider could not set it; Karpenter v0.x ignored it)", p.label, key)
			delete(m, key)
		}
	}
	data, err := json.Marshal(map[string]any{"spec": map[string]any{"provider": m}})
	if err != nil {
		c.errs = append(c.errs, p.src.DecodeError(err, nil, p.obj.Spec.Provider.Raw))
		return nil, false
	}
	holder := &providerHolder{}
	unknown, err := convert.DecodeStrict(data, holder)
	if err != nil {
		c.errs = append(c.errs, p.src.DecodeErrors(err, holder, data, decodeStrict)...)
		return nil, false
	}
	ok := true
	for _, f := range unknown {
		if f.DidYouMean != "" {
			c.errs = append(c.errs, p.src.FieldError(field.Invalid(field.NewPath(f.Path), field.OmitValueType{},
				"not a field of an inline AWS provider: did you mean "+f.DidYouMean+"?")))
			ok = false
			continue
		}
		c.result.Warnf("%s: %s: %s: dropped (not a field of an inline AWS provider)", p.src.At(f.Path), p.label, f)
	}
	return &holder.Spec.Provider, ok
}

// providerHolder decodes a Provisioner's inline spec.provider as the AWS settings, at its path.
type providerHolder struct {
	metav1.TypeMeta `json:",inline"`
	Spec            struct {
		Provider awsv1alpha1.AWS `json:"provider"`
	} `json:"spec"`
}

// DeepCopyObject makes providerHolder a runtime.Object for the strict decoder; nothing copies it.
func (h *providerHolder) DeepCopyObject() runtime.Object {
	out := *h
	return &out
}
