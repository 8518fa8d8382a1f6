package kops

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/openkarpenter/karpenter/pkg/convert"
)

// Options are what the conversion cannot read from kOps' objects. The zero value converts with
// placeholders and assumptions, each reported as a warning.
type Options struct {
	// Legacy writes what kOps ≤ 1.33 generated (Provisioner + AWSNodeTemplate) instead.
	Legacy bool `json:"legacy,omitempty"`
	// UserData maps InstanceGroup names to their nodeup script (see LoadUserData). A group
	// without one gets a placeholder that stops its nodes at boot.
	UserData map[string]string `json:"userData,omitempty"`
	// RootDeviceName is the root device of the groups' images; empty means /dev/xvda, reported.
	RootDeviceName string `json:"rootDeviceName,omitempty"`
	// RootDeviceNames overrides RootDeviceName per InstanceGroup.
	RootDeviceNames map[string]string `json:"rootDeviceNames,omitempty"`
	// Arch is the architecture of the groups' images for the legacy output: amd64 or arm64
	// (EC2's x86_64 and aarch64 are accepted); empty means amd64, reported.
	Arch string `json:"arch,omitempty"`
	// Archs overrides Arch per InstanceGroup.
	Archs map[string]string `json:"archs,omitempty"`
	// ExistingNodePools maps the NodePools already in the cluster to whether they are static
	// (see ExistingNodePools), to tell precisely which must be deleted before applying. Nil
	// means unknown: a general reminder is given instead.
	ExistingNodePools map[string]bool `json:"existingNodePools,omitempty"`
}

// validate checks the options themselves.
func (o *Options) validate() convert.Errors {
	var errs convert.Errors
	check := func(what, arch string) {
		if arch != "" && !validArch(arch) {
			errs = append(errs, fmt.Errorf("%s %q: want amd64 or arm64", what, arch))
		}
	}
	check("architecture", o.Arch)
	for _, ig := range sortedKeys(o.Archs) {
		check(fmt.Sprintf("architecture of InstanceGroup %q", ig), o.Archs[ig])
	}
	return errs
}

// generator holds one conversion's input and output.
type generator struct {
	opts    Options
	cluster *Cluster
	groups  []*InstanceGroup
	result  *convert.Result
	// clusterSource and sources are where the Cluster and each InstanceGroup were read.
	clusterSource convert.Source
	sources       map[*InstanceGroup]convert.Source
	// misspelled says, for InstanceGroups without spec.manager, which key looks like it.
	misspelled []string
}

// Convert translates the kOps objects among sources into the Karpenter objects kOps generates
// for them. Documents of other kinds are skipped with a warning. When the input breaks one of
// kOps' rules, or kOps would fail to generate an object, Convert returns every problem as
// convert.Errors and no documents.
func Convert(sources []convert.Source, opts Options) (*convert.Result, error) {
	g := &generator{opts: opts, result: &convert.Result{}, sources: map[*InstanceGroup]convert.Source{}}
	errs := opts.validate()
	errs = append(errs, g.decode(sources)...)
	if len(errs) > 0 {
		return nil, errs
	}
	invalid, problems := g.validate()
	errs = append(errs, problems...)
	g.warnDiscovery()
	managed := g.karpenterGroups()
	// The groups that break no rule are generated and checked even when others do (or the
	// cluster does), so that one run lists everything.
	for _, ig := range managed {
		if invalid[ig] {
			continue
		}
		var err error
		if opts.Legacy {
			err = g.addLegacy(ig)
		} else {
			err = g.add(ig)
		}
		if err != nil {
			errs = append(errs, g.place(ig, err))
		}
	}
	if err := g.result.Validate(); err != nil {
		errs = append(errs, convert.AsErrors(err)...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if !opts.Legacy {
		g.warnModeSwitch(managed)
	}
	g.warnUnusedOptions(managed)
	return g.result, nil
}

// decode reads the Cluster and the InstanceGroups.
func (g *generator) decode(sources []convert.Source) convert.Errors {
	var errs convert.Errors
	seen := map[string]convert.Source{}
	for _, src := range sources {
		if src.Group() != Group {
			g.result.Warnf("%s: skipping %s, which is not a kOps object", src, describe(src))
			continue
		}
		if v := strings.TrimPrefix(src.APIVersion, Group+"/"); v != "v1alpha2" && v != "v1alpha3" {
			errs = append(errs, src.FieldError(field.NotSupported(field.NewPath("apiVersion"), src.APIVersion, []string{Group + "/v1alpha2", Group + "/v1alpha3"})))
			continue
		}
		switch src.Kind {
		case "Cluster":
			c := &Cluster{}
			if err := json.Unmarshal(src.JSON, c); err != nil {
				errs = append(errs, src.DecodeErrors(err, c, src.JSON, json.Unmarshal)...)
				continue
			}
			if g.cluster != nil {
				errs = append(errs, fmt.Errorf("%s: a second Cluster %q (the first, %q, is at %s): convert one cluster at a time",
					src.At(""), c.Metadata.Name, g.cluster.Metadata.Name, g.clusterSource.At("")))
				continue
			}
			if c.Metadata.Name == "" {
				errs = append(errs, src.FieldError(field.Required(field.NewPath("metadata", "name"), "the Cluster needs its name")))
				continue
			}
			g.cluster, g.clusterSource = c, src
		case "InstanceGroup":
			ig := &InstanceGroup{}
			if err := json.Unmarshal(src.JSON, ig); err != nil {
				errs = append(errs, src.DecodeErrors(err, ig, src.JSON, json.Unmarshal)...)
				continue
			}
			if ig.Metadata.Name == "" {
				errs = append(errs, src.FieldError(field.Required(field.NewPath("metadata", "name"), "every InstanceGroup has a name")))
				continue
			}
			if first, ok := seen[ig.Metadata.Name]; ok {
				errs = append(errs, src.FieldError(field.Invalid(field.NewPath("metadata", "name"), ig.Metadata.Name,
					"a second InstanceGroup of that name (the first is at "+first.At("metadata.name")+"): rename one")))
				continue
			}
			seen[ig.Metadata.Name] = src
			g.groups = append(g.groups, ig)
			g.sources[ig] = src
			if key := misspelledManager(src); key != "" {
				g.misspelled = append(g.misspelled, fmt.Sprintf("InstanceGroup %q has spec.%s: did you mean spec.manager?", ig.Metadata.Name, key))
			}
		default:
			g.result.Warnf("%s: skipping %s, which has nothing to convert", src, describe(src))
		}
	}
	if g.cluster == nil && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("no kOps Cluster in the input: include `kops get cluster NAME -o yaml` with the InstanceGroups"))
	}
	if g.cluster != nil {
		for _, ig := range g.groups {
			if owner := ig.Metadata.Labels["kops.k8s.io/cluster"]; owner != "" && owner != g.cluster.Metadata.Name {
				errs = append(errs, g.sources[ig].FieldError(field.Invalid(field.NewPath("metadata", "labels").Key("kops.k8s.io/cluster"), owner,
					fmt.Sprintf("the InstanceGroup belongs to another cluster than %q (at %s): convert each cluster with its own InstanceGroups", g.cluster.Metadata.Name, g.clusterSource.At("metadata.name")))))
			}
		}
	}
	return errs
}

func describe(src convert.Source) string {
	if src.Kind == "" {
		return "a document without kind"
	}
	return src.Object()
}

// validate applies kOps' rules to the cluster and its Karpenter groups, and returns the groups
// that break one.
func (g *generator) validate() (invalid map[*InstanceGroup]bool, errs convert.Errors) {
	invalid = map[*InstanceGroup]bool{}
	for _, err := range validateCluster(g.cluster, g.opts.Legacy) {
		errs = append(errs, g.clusterSource.FieldError(err))
	}
	for _, ig := range g.groups {
		if ig.Spec.Manager != managerKarpenter {
			continue
		}
		for _, err := range validateInstanceGroup(g.cluster, ig, g.opts.Legacy) {
			errs = append(errs, g.sources[ig].FieldError(err))
			invalid[ig] = true
		}
	}
	return invalid, errs
}

// warnDiscovery reminds that IRSA, which Karpenter needs, needs a public OIDC discovery store
// and the AWS OIDC provider: `kops create cluster --instance-manager=karpenter` refuses to go
// without them ("karpenter requires --discovery-store"); an existing cluster is not checked.
func (g *generator) warnDiscovery() {
	spec := &g.cluster.Spec
	if !spec.karpenterEnabled() {
		return
	}
	d := spec.ServiceAccountIssuerDiscovery
	if d == nil || d.DiscoveryStore == "" || !d.EnableAWSOIDCProvider {
		g.result.Warnf("Cluster %q: Karpenter's IAM role for service accounts needs spec.serviceAccountIssuerDiscovery.discoveryStore and enableAWSOIDCProvider: true (kops create cluster says \"karpenter requires --discovery-store\")",
			g.cluster.Metadata.Name)
	}
}

// karpenterGroups are the groups kOps generates objects for: on AWS, with the Karpenter addon
// on, managed by Karpenter and of role Node.
func (g *generator) karpenterGroups() []*InstanceGroup {
	var managed, waiting []*InstanceGroup
	for _, ig := range g.groups {
		if ig.Spec.Manager == managerKarpenter && ig.Spec.Role == roleNode {
			managed = append(managed, ig)
		}
	}
	if !g.cluster.Spec.isAWS() || !g.cluster.Spec.karpenterEnabled() {
		waiting, managed = managed, nil
	}
	switch {
	case len(waiting) > 0:
		g.result.Warnf("Cluster %q: spec.karpenter.enabled is not true, so kOps generates nothing for InstanceGroups %s", g.cluster.Metadata.Name, names(waiting))
	case len(managed) == 0:
		hint := ""
		if len(g.misspelled) > 0 {
			hint = ". " + strings.Join(g.misspelled, " ")
		}
		g.result.Warnf("Cluster %q: no InstanceGroup has spec.manager Karpenter and role Node; nothing to write%s", g.cluster.Metadata.Name, hint)
	default:
		for _, m := range g.misspelled {
			g.result.Warnf("%s Without it kOps generates nothing for the group", m)
		}
	}
	return managed
}

// misspelledManager returns the key of an InstanceGroup's spec that looks like a misspelling
// of manager, when the spec has no manager. InstanceGroups are read leniently (kOps has many
// fields this conversion ignores), so only the key that decides whether anything is generated
// is checked.
func misspelledManager(src convert.Source) string {
	var raw struct {
		Spec map[string]json.RawMessage `json:"spec"`
	}
	if json.Unmarshal(src.JSON, &raw) != nil {
		return ""
	}
	if _, ok := raw.Spec["manager"]; ok {
		return ""
	}
	keys := make([]string, 0, len(raw.Spec))
	for k := range raw.Spec {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if convert.Suggest(k, []string{"manager"}) != "" {
			return k
		}
	}
	return ""
}

// placedError is an error about one field of an InstanceGroup, placed at its line by place.
type placedError struct {
	path string
	err  error
}

func (e *placedError) Error() string { return e.err.Error() }
func (e *placedError) Unwrap() error { return e.err }

// at marks err as being about the field path of the InstanceGroup being converted.
func at(path string, err error) error { return &placedError{path: path, err: err} }

// place names the file and line of an error converting ig: the field's, when at marked it.
func (g *generator) place(ig *InstanceGroup, err error) error {
	path := ""
	var placed *placedError
	if errors.As(err, &placed) {
		path = placed.path
	}
	return fmt.Errorf("%s: %w", g.sources[ig].At(path), err)
}

// documents returns a document for each kind of object made from a group (named as the
// command writes them), each traced to the group's input.
func (g *generator) documents(ig *InstanceGroup, kinds ...string) []convert.Document {
	src := g.sources[ig]
	docs := make([]convert.Document, len(kinds))
	for i, kind := range kinds {
		docs[i] = convert.Document{File: kind + "-" + ig.Metadata.Name + ".yaml", From: &src}
		docs[i].Trace("metadata.name", src, "metadata.name")
	}
	return docs
}

// add converts one group as kOps 1.36 does.
func (g *generator) add(ig *InstanceGroup) error {
	docs := g.documents(ig, "ec2nodeclass", "nodepool")
	nodeClass, err := g.ec2NodeClass(ig, &docs[0])
	if err != nil {
		return err
	}
	nodePool, err := g.nodePool(ig, &docs[1])
	if err != nil {
		return err
	}
	docs[0].Content, docs[1].Content = nodeClass, nodePool
	g.result.Add(docs...)
	return nil
}

// addLegacy converts one group as kOps ≤ 1.33 did.
func (g *generator) addLegacy(ig *InstanceGroup) error {
	docs := g.documents(ig, "awsnodetemplate", "provisioner")
	provisioner, err := g.provisioner(ig, &docs[1])
	if err != nil {
		return err
	}
	name := ig.Metadata.Name
	docs[0].Content, docs[1].Content = g.awsNodeTemplate(ig), provisioner
	g.result.Add(docs...)
	g.result.Warnf("InstanceGroup %q: AWSNodeTemplate %q uses launch template %s.%s, which kOps ≤ 1.33 creates with `kops update cluster`",
		name, name, name, g.cluster.Metadata.Name)
	return nil
}

// warnModeSwitch reminds that Karpenter cannot switch a NodePool between dynamic and static.
func (g *generator) warnModeSwitch(managed []*InstanceGroup) {
	if len(managed) == 0 {
		return
	}
	var static, dynamic []*InstanceGroup
	for _, ig := range managed {
		if ig.Spec.MinSize != nil && *ig.Spec.MinSize > 0 {
			static = append(static, ig)
		} else {
			dynamic = append(dynamic, ig)
		}
	}
	if g.opts.ExistingNodePools == nil {
		g.result.Warnf("Karpenter cannot switch a NodePool between dynamic and static: if minSize was added to or removed from an InstanceGroup, delete its NodePool (kubectl delete nodepool NAME) before applying (static: %s; dynamic: %s)",
			orNone(names(static)), orNone(names(dynamic)))
		return
	}
	for _, ig := range managed {
		name := ig.Metadata.Name
		wasStatic, exists := g.opts.ExistingNodePools[name]
		isStatic := ig.Spec.MinSize != nil && *ig.Spec.MinSize > 0
		if !exists || wasStatic == isStatic {
			continue
		}
		g.result.Warnf("NodePool %q is %s in the cluster and %s now; Karpenter cannot switch it: run `kubectl delete nodepool %s` before applying",
			name, mode(wasStatic), mode(isStatic), name)
	}
}

func mode(static bool) string {
	if static {
		return "static"
	}
	return "dynamic"
}

// warnUnusedOptions reports per-group options that match no converted group.
func (g *generator) warnUnusedOptions(managed []*InstanceGroup) {
	known := map[string]bool{}
	for _, ig := range managed {
		known[ig.Metadata.Name] = true
	}
	var unused []string
	if !g.opts.Legacy {
		for _, name := range sortedKeys(g.opts.UserData) {
			if !known[name] {
				unused = append(unused, fmt.Sprintf("nodeup script for %q", name))
			}
		}
		for _, name := range sortedKeys(g.opts.RootDeviceNames) {
			if !known[name] {
				unused = append(unused, fmt.Sprintf("root device name for %q", name))
			}
		}
	} else {
		for _, name := range sortedKeys(g.opts.Archs) {
			if !known[name] {
				unused = append(unused, fmt.Sprintf("architecture for %q", name))
			}
		}
	}
	for _, u := range unused {
		g.result.Warnf("%s: no converted InstanceGroup has that name", u)
	}
}

func names(groups []*InstanceGroup) string {
	list := make([]string, 0, len(groups))
	for _, ig := range groups {
		list = append(list, ig.Metadata.Name)
	}
	sort.Strings(list)
	return strings.Join(list, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
