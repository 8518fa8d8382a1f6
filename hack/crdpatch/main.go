// Command crdpatch adds to the generated CRDs the schema constraints controller-gen cannot
// express from Go markers: limits on the values of a map[string]string (its
// additionalProperties) and on the fields of types from other modules (corev1.Taint). Each is
// what Karpenter's published CRDs say at the same place, so the API server refuses the same
// objects with the same messages. `make generate` runs it after controller-gen.
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

const (
	// labelValuePattern is Kubernetes' label value syntax.
	labelValuePattern = `^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	// qualifiedNamePattern is Kubernetes' qualified name syntax (an optional lower-case DNS
	// subdomain and '/', then a name), which Karpenter requires of taint keys and values.
	qualifiedNamePattern = `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
	// quantityPattern is resource.Quantity's syntax, as Kubernetes publishes it for quantities.
	quantityPattern = `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`
)

// constraint sets schema limits on the property at a path of a CRD's schema.
type constraint struct {
	file string
	// path names properties from the version's root schema, dot separated; "[]" steps into an
	// array's items and "{}" into a map's values.
	path      string
	minLength int64 // 0: unchanged
	maxLength int64 // 0: unchanged
	pattern   string
	enum      []string
	// intOrString makes a string property take an integer too (x-kubernetes-int-or-string),
	// replacing its pattern by pattern.
	intOrString bool
	// rules are CEL rules added to the property.
	rules apiextensionsv1.ValidationRules
	// preserveUnknownValues makes an object property's values (its additionalProperties)
	// keep unknown fields, as controller-gen writes a map of JSON values; nothing else is set.
	preserveUnknownValues bool
}

// overlayAWSLabels are the karpenter.k8s.aws labels a NodeOverlay requirement may name, in the
// order of the AWS provider's published CRD.
var overlayAWSLabels = []string{
	"karpenter.k8s.aws/ec2nodeclass", "karpenter.k8s.aws/instance-encryption-in-transit-supported",
	"karpenter.k8s.aws/instance-category", "karpenter.k8s.aws/instance-hypervisor", "karpenter.k8s.aws/instance-family",
	"karpenter.k8s.aws/instance-generation", "karpenter.k8s.aws/instance-local-nvme", "karpenter.k8s.aws/instance-size",
	"karpenter.k8s.aws/instance-cpu", "karpenter.k8s.aws/instance-cpu-manufacturer",
	"karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz", "karpenter.k8s.aws/instance-memory",
	"karpenter.k8s.aws/instance-ebs-bandwidth", "karpenter.k8s.aws/instance-network-bandwidth",
	"karpenter.k8s.aws/instance-gpu-name", "karpenter.k8s.aws/instance-gpu-manufacturer",
	"karpenter.k8s.aws/instance-gpu-count", "karpenter.k8s.aws/instance-gpu-memory",
	"karpenter.k8s.aws/instance-accelerator-name", "karpenter.k8s.aws/instance-accelerator-manufacturer",
	"karpenter.k8s.aws/instance-accelerator-count", "karpenter.k8s.aws/instance-capability-flex",
}

// quoted is a CEL list's elements: each string double-quoted, comma separated.
func quoted(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = `"` + s + `"`
	}
	return strings.Join(out, ", ")
}

// taintConstraints are Karpenter's limits on a list of corev1.Taint at path.
func taintConstraints(file, path string) []constraint {
	return []constraint{
		{file: file, path: path + "[].key", minLength: 1, pattern: qualifiedNamePattern},
		{file: file, path: path + "[].value", pattern: qualifiedNamePattern},
		{file: file, path: path + "[].effect", enum: []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}},
	}
}

func constraints() []constraint {
	const (
		nodePools    = "karpenter.sh_nodepools.yaml"
		nodeClaims   = "karpenter.sh_nodeclaims.yaml"
		nodeClasses  = "karpenter.k8s.aws_ec2nodeclasses.yaml"
		nodeOverlays = "karpenter.sh_nodeoverlays.yaml"
		templateSpec = "spec.template.spec"
	)
	out := []constraint{
		{file: nodePools, path: "spec.template.metadata.labels{}", maxLength: 63, pattern: labelValuePattern},
		// Karpenter sets these two on the values array, where the API server ignores them, and
		// refuses such values when it validates the NodePool at run time; we refuse them here.
		{file: nodePools, path: templateSpec + ".requirements[].values[]", maxLength: 63, pattern: labelValuePattern},
		// A NodeClaim's requirements name its NodePool; a NodePool's may not. The key's type is
		// shared, so the rule is added here, on the key as Karpenter does, naming the key.
		{file: nodePools, path: templateSpec + ".requirements[].key", rules: apiextensionsv1.ValidationRules{
			{Rule: `self != "karpenter.sh/nodepool"`, Message: `label "karpenter.sh/nodepool" is restricted`},
		}},
		// A NodeOverlay's requirement keys are label keys, of which Karpenter's own domain
		// offers only the capacity type and the NodePool. (Karpenter also sets maxLength and
		// a pattern on the values array, where the API server ignores them; the controller
		// checks the values, as Karpenter's does, and says so in ValidationSucceeded.)
		{file: nodeOverlays, path: "spec.requirements[].key", maxLength: 316, pattern: qualifiedNamePattern, rules: apiextensionsv1.ValidationRules{
			{Rule: `self in ["karpenter.sh/capacity-type", "karpenter.sh/nodepool"] || !self.find("^([^/]+)").endsWith("karpenter.sh")`, Message: `label domain "karpenter.sh" is restricted`},
			{Rule: `self != "kubernetes.io/hostname"`, Message: `label "kubernetes.io/hostname" is restricted`},
			// The AWS provider's published NodeOverlay CRD (v1.15.2) restricts its domain but
			// for the labels of instance types (not of offerings, placement or tenancy).
			{Rule: `self in [` + quoted(overlayAWSLabels) + `] || !self.find("^([^/]+)").endsWith("karpenter.k8s.aws")`, Message: `label domain "karpenter.k8s.aws" is restricted`},
		}},
		// spec.kubelet is free-form, as Karpenter v1.15's map of JSON values makes it: its
		// values, whatever they hold, are kept too.
		{file: nodeClasses, path: "spec.kubelet", preserveUnknownValues: true},
		// The legacy AWSNodeTemplate shares EC2NodeClass's BlockDevice type, but Karpenter v0.x
		// took any quantity, integer or string, as its volume size; stored objects still do.
		{file: "karpenter.k8s.aws_awsnodetemplates.yaml", path: "spec.blockDeviceMappings[].ebs.volumeSize", pattern: quantityPattern, intOrString: true},
	}
	out = append(out, taintConstraints(nodePools, templateSpec+".taints")...)
	out = append(out, taintConstraints(nodePools, templateSpec+".startupTaints")...)
	out = append(out, taintConstraints(nodeClaims, "spec.taints")...)
	return append(out, taintConstraints(nodeClaims, "spec.startupTaints")...)
}

func main() {
	dir := "config/crd"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	byFile := map[string][]constraint{}
	var files []string
	for _, c := range constraints() {
		if _, ok := byFile[c.file]; !ok {
			files = append(files, c.file)
		}
		byFile[c.file] = append(byFile[c.file], c)
	}
	for _, file := range files {
		if err := apply(filepath.Join(dir, file), byFile[file]); err != nil {
			fmt.Fprintf(os.Stderr, "crdpatch: %v\n", err)
			os.Exit(1)
		}
	}
}

func apply(file string, cs []constraint) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	for i := range crd.Spec.Versions {
		for _, c := range cs {
			if err := set(crd.Spec.Versions[i].Schema.OpenAPIV3Schema, strings.Split(c.path, "."), c); err != nil {
				return fmt.Errorf("%s: %s: %w", file, c.path, err)
			}
		}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	out = bytes.Replace(out, []byte("status:\n  acceptedNames:\n    kind: \"\"\n    plural: \"\"\n  conditions: null\n  storedVersions: null\n"), nil, 1)
	return os.WriteFile(file, append([]byte("---\n"), out...), 0o644)
}

// set walks steps down from schema and sets c's limits on the property it reaches. A step
// "name[]" or "name{}" is the property name followed by a step into its items or values.
func set(schema *apiextensionsv1.JSONSchemaProps, steps []string, c constraint) error {
	if len(steps) == 0 && c.preserveUnknownValues {
		if schema.Type != "object" || schema.Properties != nil {
			return fmt.Errorf("is a %q with properties, not a free-form object", schema.Type)
		}
		schema.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: ptrTo(true)}}
		return nil
	}
	if len(steps) == 0 {
		if schema.Type != "string" {
			return fmt.Errorf("is a %q, not a string", schema.Type)
		}
		if c.minLength > 0 {
			schema.MinLength = &c.minLength
		}
		if c.maxLength > 0 {
			schema.MaxLength = &c.maxLength
		}
		if c.pattern != "" {
			schema.Pattern = c.pattern
		}
		schema.XValidations = append(schema.XValidations, c.rules...)
		if c.intOrString {
			schema.Type, schema.XIntOrString = "", true
			schema.AnyOf = []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}}
		}
		for _, v := range c.enum {
			schema.Enum = append(schema.Enum, apiextensionsv1.JSON{Raw: []byte(fmt.Sprintf("%q", v))})
		}
		return nil
	}
	step := steps[0]
	switch {
	case strings.HasSuffix(step, "[]"):
		return into(schema, strings.TrimSuffix(step, "[]"), steps[1:], c, func(s *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
			if s.Items == nil {
				return nil
			}
			return s.Items.Schema
		})
	case strings.HasSuffix(step, "{}"):
		return into(schema, strings.TrimSuffix(step, "{}"), steps[1:], c, func(s *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
			if s.AdditionalProperties == nil {
				return nil
			}
			return s.AdditionalProperties.Schema
		})
	default:
		return into(schema, step, steps[1:], c, func(s *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps { return s })
	}
}

// into steps into the property name of schema, then through inner (its items, its values or
// itself), and sets c below it. Properties holds values, so the changed property is stored
// back.
func into(schema *apiextensionsv1.JSONSchemaProps, name string, rest []string, c constraint, inner func(*apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps) error {
	prop, ok := schema.Properties[name]
	if !ok {
		return fmt.Errorf("no property %s", name)
	}
	next := inner(&prop)
	if next == nil {
		return fmt.Errorf("%s has no items or values", name)
	}
	if err := set(next, rest, c); err != nil {
		return err
	}
	schema.Properties[name] = prop
	return nil
}

func ptrTo[T any](v T) *T { return &v }
